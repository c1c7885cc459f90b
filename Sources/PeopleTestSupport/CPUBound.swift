import Foundation
import Testing

/// A test that computes for seconds without waiting on anything (randomized histories, fuzz corpora):
/// it runs on one thread kept for such tests, never on Swift's cooperative pool.
///
/// The pool has one thread per core (two on the CI machine) and is what every `await` in every other
/// test resumes on. Two CPU-bound tests running there at once held both threads for the 30–45 s they
/// took together in the parallel suite, so the tests that wait on real sockets, hubs and webhook
/// receivers made no progress meanwhile and their wall-clock deadlines ran out (a webhook test failed
/// that way once in a fresh-clone run). On the thread of their own, they share it one at a time and
/// take at most one core; the pool keeps the other.
///
/// ```swift
/// @Test("3–5 clients … converge", .cpuBound, arguments: 0..<60)
/// ```
public struct CPUBoundTrait: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(CPUBoundExecutor.shared, operation: function)
    }

    /// Whether the caller runs on the thread kept for CPU-bound tests (by the thread's identity, not
    /// its name).
    public static var isOnItsThread: Bool { CPUBoundExecutor.shared.isCurrent }

    /// The calling thread as Foundation names it, for a failure's message.
    public static var currentThreadName: String {
        Thread.isMainThread ? "the main thread" : Thread.current.name.map { "\"\($0)\"" } ?? "an unnamed thread"
    }
}

extension Trait where Self == CPUBoundTrait {
    /// Runs the test (or every test of the suite) on the thread kept for CPU-bound tests.
    public static var cpuBound: Self { CPUBoundTrait() }
}

/// A thread that runs the jobs given to it in order: for the life of the process (`CPUBoundExecutor`),
/// or until `stop()` once the work it was made for is done (`blocking`).
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var stopping = false
    /// The thread, once it runs (guarded by `condition`).
    private var thread: pthread_t?

    init(name: String?) {
        // Foundation on Linux names only a running thread, and only once `start()` has returned to
        // the thread that started it (a name set earlier is dropped: the check is by identity).
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            started.wait()
            if let name { Thread.current.name = name }
            condition.lock()
            self.thread = pthread_self()
            condition.unlock()
            self.run()
        }
        thread.stackSize = 8 << 20
        thread.start()
        started.signal()
    }

    var isCurrent: Bool {
        condition.lock()
        defer { condition.unlock() }
        return thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Ends the thread once the jobs given so far have run.
    func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        let executor = asUnownedTaskExecutor()
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            guard !jobs.isEmpty else { condition.unlock(); return }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: executor)
        }
    }
}

/// The one thread CPU-bound tests share.
enum CPUBoundExecutor {
    static let threadName = "cpu-bound tests"
    static let shared = ThreadExecutor(name: threadName)
}
