import Foundation
import WebSocketTransport

/// The one thread that owns the hub's state: the transport's service thread. Work done elsewhere (a
/// store read, a token check, a timer) comes back through `perform`.
public protocol ServiceThread: AnyObject, Sendable {
    /// Runs `work` on the service thread soon; false if the thread has stopped.
    @discardableResult func perform(_ work: @escaping @Sendable () -> Void) -> Bool
}

extension WebSocketServer: ServiceThread {}

/// Where the hub's work off the service thread runs, and its time: the real ones by default; the
/// in-process tests pass their own so that every hop is theirs to step.
public struct HubRuntime: Sendable {
    /// Milliseconds since the epoch.
    public var clock: @Sendable () -> Int64
    /// A fresh unguessable session id per call.
    public var makeSessionID: @Sendable () -> String
    /// Runs blocking work (store reads, store checks) off the service thread.
    public var background: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// Runs `work` after `milliseconds` on some thread (a presence list that must wait its turn).
    public var after: @Sendable (_ milliseconds: Int64, _ work: @escaping @Sendable () -> Void) -> Void
    /// The bytes the process's heap holds now (`limits.maxMemoryBytes` is checked against it), nil if
    /// unknown. Costly (it walks malloc's lists): called off the service thread.
    public var heapInUse: @Sendable () -> Int?
    /// Hands memory freed by unloaded rooms back to the system, so the resident size falls too.
    public var releaseFreeMemory: @Sendable () -> Void

    public init(clock: @escaping @Sendable () -> Int64 = HubRuntime.systemMilliseconds,
                makeSessionID: @escaping @Sendable () -> String = HubRuntime.randomSessionID,
                background: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = HubRuntime.readQueue,
                after: @escaping @Sendable (Int64, @escaping @Sendable () -> Void) -> Void = HubRuntime.dispatchAfter,
                heapInUse: @escaping @Sendable () -> Int? = ProcessMemory.heapInUse,
                releaseFreeMemory: @escaping @Sendable () -> Void = ProcessMemory.releaseFree) {
        self.clock = clock
        self.makeSessionID = makeSessionID
        self.background = background
        self.after = after
        self.heapInUse = heapInUse
        self.releaseFreeMemory = releaseFreeMemory
    }

    public static let systemMilliseconds: @Sendable () -> Int64 = {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }

    public static let randomSessionID: @Sendable () -> String = {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
    }

    private static let reads = DispatchQueue(label: "peoplekeeper.hub.store-reads", attributes: .concurrent)
    public static let readQueue: @Sendable (@escaping @Sendable () -> Void) -> Void = { reads.async(execute: $0) }

    public static let dispatchAfter: @Sendable (Int64, @escaping @Sendable () -> Void) -> Void = { wait, work in
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(wait)), execute: work)
    }
}

/// Carries service-thread objects through another thread untouched, back to the service thread.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
