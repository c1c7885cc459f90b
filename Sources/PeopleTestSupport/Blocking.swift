import Foundation

/// Runs `body` on a thread of its own and waits for it without holding a thread of Swift's cooperative pool.
///
/// Tests run in parallel on that pool, which has one thread per core (two on the CI machine). A test that
/// blocks it — starting PostgreSQL, waiting for a process, a synchronous store call waiting for a commit —
/// stalls every other test's `await`: seen as hub tests whose clients had connected but could not send
/// their hello before the hub's hello timeout. Anything in a test that waits on the outside world goes
/// through here.
public func blocking<T>(_ body: @escaping () throws -> T) async throws -> T {
    let work = Unchecked(body)
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Unchecked<T>, Error>) in
        let thread = Thread {
            do { continuation.resume(returning: Unchecked(try work.value())) } catch { continuation.resume(throwing: error) }
        }
        thread.stackSize = 8 << 20
        thread.start()
    }.value
}

/// Carries a value to the thread `blocking` starts and back; the caller waits meanwhile, so it is never
/// used from two threads at once.
public struct Unchecked<Value>: @unchecked Sendable {
    public let value: Value
    public init(_ value: Value) { self.value = value }
}
