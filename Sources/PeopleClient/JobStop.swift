#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Job control's stop (Ctrl-Z), for a program that handles the key itself: the process stops, and the
/// thread that asked does not run on until the process is continued (`fg`, `SIGCONT`).
///
/// `kill(getpid(), SIGSTOP)` does not promise the second part. A signal sent to the process is taken
/// by whichever of its threads the kernel picks; the stop starts only when that thread runs, and the
/// thread that sent it goes on meanwhile: in a small C program 198 runs of 200 wrote after asking to
/// stop. The terminal screen did: it entered full-screen mode again and drew part of a frame over the
/// shell, which then said "Stopped" inside the screen (a CI run). A signal sent to this thread is
/// taken by this thread, on its way back from the call.
public enum JobStop {
    /// Stops the process; returns once it has been continued.
    public static func untilContinued() {
        _ = pthread_kill(pthread_self(), SIGSTOP)
    }
}
