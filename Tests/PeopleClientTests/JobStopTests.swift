import Foundation
import PeopleClient
import Testing

#if os(Linux)  // the helper reads the process's state in /proc
@Suite struct JobStopTests {
    /// The thread that asks to stop does nothing more until the process is continued. A child process
    /// asks from a thread of its own (the terminal screen asks from its queue's thread), 40 times, and
    /// after each stop the thread writes a byte to a file; a helper waits for the process to be stopped
    /// (with the bytes of the rounds before), looks at the file, then sends `SIGCONT` (if it waits 10 s
    /// in vain it kills the child, which fails the test). With the stop sent to the process
    /// (`kill(getpid(), SIGSTOP)`, as the screen did) the byte was often there already: the screen's
    /// next step entered full-screen mode and drew over the shell before the stop took (a CI run).
    @Test func theAskingThreadDoesNothingMoreUntilContinued() async {
        await #expect(processExitsWith: .success) {
            let rounds = 40
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("job-stop-\(getpid())").path
            let descriptor = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            guard descriptor >= 0 else { exit(2) }
            // The state is the third field of /proc/PID/stat, after the command's name in parentheses.
            let script = """
                state() { sed 's/.*) //' /proc/\(getpid())/stat | cut -d' ' -f1; }
                size() { stat -c %s '\(file)'; }
                early=0
                for i in $(seq 0 \(rounds - 1)); do
                    waited=0
                    while [ "$(size)" -lt "$i" ] || [ "$(state)" != T ]; do
                        waited=$((waited + 1))
                        [ "$waited" -lt 2000 ] || { kill -KILL \(getpid()); exit 99; }
                        sleep 0.001
                    done
                    [ "$(size)" -eq "$i" ] || early=$((early + 1))
                    kill -CONT \(getpid())
                done
                exit $early
                """
            let helper = Process()
            helper.executableURL = URL(fileURLWithPath: "/bin/sh")
            helper.arguments = ["-c", script]
            guard (try? helper.run()) != nil else { exit(2) }
            let thread = Thread {
                for _ in 0..<rounds {
                    JobStop.untilContinued()
                    _ = write(descriptor, "x", 1)
                }
            }
            thread.start()
            helper.waitUntilExit()
            unlink(file)
            exit(helper.terminationStatus == 0 ? 0 : 1)
        }
    }
}
#endif
