import Foundation

/// Runs `body` on a thread of its own and waits for it without holding a thread of Swift's cooperative pool.
///
/// Tests run in parallel on that pool, which has one thread per core (two on the CI machine). A test that
/// blocks it — starting PostgreSQL, waiting for a process, a synchronous store call waiting for a commit —
/// stalls every other test's `await`: seen as hub tests whose clients had connected but could not send
/// their hello before the hub's hello timeout. Anything in a test that waits on the outside world goes
/// through here.
///
/// `body` runs inside the calling test's task (on a task executor of its own thread), so an `#expect`
/// in it is the test's: it fails that test, and `withKnownIssue` around the call sees it. On a bare
/// `Thread` it had no test; Swift Testing handed such an issue to every scope open at the time, so a
/// property test running beside counted it as a failure of its own (TP1 failed so once).
public func blocking<T>(_ body: @escaping () throws -> T) async throws -> T {
    let executor = ThreadExecutor(name: nil)
    defer { executor.stop() }
    let work = Unchecked(body)
    return try await withTaskExecutorPreference(executor, isolation: nil) {
        Unchecked(try work.value())
    }.value
}

/// Carries a value to the thread `blocking` starts and back; the caller waits meanwhile, so it is never
/// used from two threads at once.
public struct Unchecked<Value>: @unchecked Sendable {
    public let value: Value
    public init(_ value: Value) { self.value = value }
}
