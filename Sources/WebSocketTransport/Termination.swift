import Foundation

/// Returns when the process gets SIGTERM or SIGINT (for the test servers built on the transport: the
/// relay and the echo mode; the hub itself uses swift-service-lifecycle).
public func waitForTermination() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let once = Once(continuation)
        for signalNumber in [SIGTERM, SIGINT] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { once.fire() }
            source.resume()
            Once.keep(source)
        }
    }
}

/// Resumes a continuation once, from whichever signal comes first.
private final class Once: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Void, Never>?
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []

    init(_ continuation: CheckedContinuation<Void, Never>) { self.continuation = continuation }

    static func keep(_ source: DispatchSourceSignal) { sources.append(source) }

    func fire() {
        lock.lock()
        let pending = continuation
        continuation = nil
        lock.unlock()
        pending?.resume()
    }
}
