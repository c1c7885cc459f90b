import CLibWebSockets
import Synchronization

/// Work handed to the lws service thread from other threads.
///
/// `post` appends and wakes the loop with `lws_cancel_service`; the service thread runs everything
/// queued each time it is woken (wakeups coalesce, so it always drains the whole inbox). A post from
/// a thread with no loop of its own wakes the loop every time, even when the inbox was not empty:
/// waking only on the first post loses work (seen under load: a cancel that lands while the loop is
/// handling the previous one can be swallowed, and nothing would wake it again). A post from another
/// service thread may leave the wake to that thread's end of round (`post(_:wake: false)`, then
/// `wake()`), so a broadcast to a thousand connections served elsewhere costs one wakeup, not a
/// thousand. The context pointer lives under the same lock and is cleared before the context is
/// destroyed, so a late `post` never touches a dead context: its work is dropped instead.
final class Inbox: Sendable {
    private struct State {
        var work: [@Sendable () -> Void] = []
        var context: LWSContextPointer?
    }
    private let state = Mutex(State())

    /// Queues `work` for the service thread and, unless `wake` is false, wakes it. Returns false when
    /// the loop is gone (the work is dropped).
    @discardableResult
    func post(_ work: @escaping @Sendable () -> Void, wake: Bool = true) -> Bool {
        let context: LWSContextPointer? = state.withLock { state in
            guard state.context != nil else { return nil }
            state.work.append(work)
            return state.context
        }
        guard let context else { return false }
        if wake { lws_cancel_service(context.raw) }
        return true
    }

    /// Wakes the service thread (for work posted with `wake: false`).
    func wake() {
        guard let context = state.withLock({ $0.context }) else { return }
        lws_cancel_service(context.raw)
    }

    /// Runs everything queued (service thread only).
    func drain() {
        let work = state.withLock { state in
            defer { state.work.removeAll(keepingCapacity: true) }
            return state.work
        }
        for item in work { item() }
    }

    func attach(_ context: LWSContextPointer?) {
        state.withLock { $0.context = context }
    }

    /// Forgets the context (before it is destroyed) and returns what was still queued.
    func detach() -> [@Sendable () -> Void] {
        state.withLock { state in
            state.context = nil
            defer { state.work.removeAll() }
            return state.work
        }
    }
}

/// An lws context pointer that may cross threads (only `lws_cancel_service` is called on it off the
/// service thread, which lws allows).
struct LWSContextPointer: @unchecked Sendable {
    let raw: OpaquePointer
}
