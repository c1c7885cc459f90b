import CLibWebSockets
import Foundation
import Synchronization

/// How a service thread waits for its sockets: lws's own `poll()` over every connection each round,
/// or an epoll loop (libev, lws's "foreign loop" support), whose cost follows the ready sockets only.
public enum LWSEventLoop: String, Sendable, CaseIterable {
    case epoll
    case poll
}

extension LWSEventLoop {
    /// Whether lws can run on libev here (its plugin, `libwebsockets-evlib-ev`, loads), asked once per
    /// process with a context that listens nowhere, so that a real context's failure (a port in use)
    /// is never retried or reported twice.
    static let epollAvailable: Bool = {
        guard let loop = pk_ev_loop_new() else { return false }
        defer { pk_ev_loop_destroy(loop) }
        var info = lws_context_creation_info()
        info.port = -1  // CONTEXT_PORT_NO_LISTEN
        info.gid = -1
        info.uid = -1
        info.options = pk_option_libev
        var loops: [UnsafeMutableRawPointer?] = [loop]
        return loops.withUnsafeMutableBufferPointer { buffer -> Bool in
            info.foreign_loops = buffer.baseAddress
            guard let probe = lws_create_context(&info) else { return false }
            lws_context_destroy(probe)
            return true
        }
    }()
}

/// What the server and the client share: one lws context, the thread that services it, the inbox
/// other threads post to, and the C allocations lws keeps pointers to until the context is destroyed.
///
/// Only the service thread touches lws (and every connection). `perform` is how other threads get
/// there. Subclasses answer lws callbacks in `callback(...)`.
public class LWSEndpoint: @unchecked Sendable {
    let inbox = Inbox()
    /// Service thread only.
    var context: OpaquePointer?
    /// Service thread only: the loop ends after the current `lws_service` returns.
    var stopRequested = false
    /// Service thread only.
    var connections: [UInt64: WebSocketConnection] = [:]
    /// Which of a server's service threads this is (0: the first); set before the loop starts.
    var serviceThreadIndex = 0
    /// Service thread only: endpoints this one posted work to without waking them; woken at the end of
    /// this loop's round (`flushWakes`).
    private var pendingWakes: [LWSEndpoint] = []
    private var retained: [UnsafeMutableRawPointer] = []
    /// How the service thread waits for its sockets; set before the loop starts.
    var eventLoop: LWSEventLoop = .epoll
    /// The loop the service thread actually runs (`.poll` when libev's could not be had).
    private(set) var servedBy: LWSEventLoop = .poll
    /// Service thread only: whether a connection whose queue was empty is written at the end of the
    /// round (no POLLOUT asked for and dropped again) rather than from lws's WRITEABLE callback.
    var writesAtTurnEnd = false
    var turnEndWrites: [WebSocketConnection] = []
    /// Service thread only: the loop's rounds, counted.
    private(set) var turn: UInt64 = 0
    private let thread = JoinableThread()
    private let stopped = Stopped()
    let protocolName: String

    init(protocolName: String) {
        self.protocolName = protocolName
    }

    deinit {
        for pointer in retained { pointer.deallocate() }
        thread.detach()
    }

    /// Runs `work` on the service thread. Returns false when the loop has stopped (work dropped).
    @discardableResult
    public func perform(_ work: @escaping @Sendable () -> Void) -> Bool {
        inbox.post(work)
    }

    /// Runs `work` on `target`'s service thread, from this endpoint's own service thread: in order with
    /// everything else this thread posts there, woken once at the end of this thread's round.
    func post(_ work: @escaping @Sendable () -> Void, to target: LWSEndpoint) {
        guard target.inbox.post(work, wake: false) else { return }
        if !pendingWakes.contains(where: { $0 === target }) { pendingWakes.append(target) }
    }

    private func writeTurnEnd() {
        // Writing a connection read this round runs lws's POLLOUT handling, which may hand on frames
        // lws held back (a connection whose reading was paused): what they lead to is written here
        // too, not left for a round that might wait on a quiet loop.
        for pass in 0..<8 {
            guard !turnEndWrites.isEmpty else { return }
            let due = turnEndWrites
            turnEndWrites.removeAll(keepingCapacity: true)
            for connection in due {
                if pass < 7 { connection.writeAtTurnEnd() } else { connection.writeWhenWritable() }
            }
        }
    }

    /// Wakes the endpoints posted to during this round (service thread, after each `lws_service`).
    private func flushWakes() {
        guard !pendingWakes.isEmpty else { return }
        for target in pendingWakes { target.inbox.wake() }
        pendingWakes.removeAll(keepingCapacity: true)
    }

    /// Connection ids, unique within the process (a server's contexts share the space).
    private static let connectionIDs = Atomic<UInt64>(0)

    func nextID() -> UInt64 {
        Self.connectionIDs.add(1, ordering: .relaxed).newValue
    }

    // MARK: C allocations kept for the context's lifetime

    func keep(_ string: String) -> UnsafePointer<CChar> {
        let utf8 = Array(string.utf8CString)
        let pointer = UnsafeMutableRawPointer.allocate(byteCount: utf8.count, alignment: 1)
        utf8.withUnsafeBytes { pointer.copyMemory(from: $0.baseAddress!, byteCount: utf8.count) }
        retained.append(pointer)
        return UnsafePointer(pointer.assumingMemoryBound(to: CChar.self))
    }

    func keep<T>(_ values: [T]) -> UnsafeMutablePointer<T> {
        let raw = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<T>.stride * max(values.count, 1),
                                                   alignment: MemoryLayout<T>.alignment)
        retained.append(raw)
        let typed = raw.bindMemory(to: T.self, capacity: values.count)
        typed.initialize(from: values, count: values.count)
        return typed
    }

    /// The protocol table: ours at index 0 (upgrades without a subprotocol go to index 0), then the
    /// terminator. Unhandled reasons are forwarded to `lws_callback_http_dummy`.
    func makeProtocols(rxBufferSize: Int) -> UnsafeMutablePointer<lws_protocols> {
        var ours = lws_protocols()
        ours.name = keep(protocolName)
        ours.callback = lwsCallback
        ours.per_session_data_size = 0
        ours.rx_buffer_size = rxBufferSize
        // lws sends at most this much per send() (else rx_buffer_size, 4 KiB: a 64 KiB welcome would
        // take 16 writable rounds) and buffers the rest itself.
        ours.tx_packet_size = WebSocketConnection.coalescedWriteBytes * 2
        return keep([ours, lws_protocols()])
    }

    /// Service thread only: where `WebSocketConnection.writeQueued` frames several messages for one
    /// raw write (lws copies whatever the socket does not take at once).
    lazy var coalescingBuffer: UnsafeMutableRawPointer = {
        let buffer = UnsafeMutableRawPointer.allocate(
            byteCount: pk_lws_pre + WebSocketConnection.coalescedWriteBytes, alignment: 16)
        retained.append(buffer)
        return buffer
    }()

    /// permessage-deflate (RFC 7692), offered by the client and accepted by the server.
    func makeExtensions() -> UnsafeMutablePointer<lws_extension> {
        var deflate = lws_extension()
        deflate.name = keep("permessage-deflate")
        deflate.callback = pk_pm_deflate_callback()
        deflate.client_offer = keep("permessage-deflate; client_max_window_bits")
        return keep([deflate, lws_extension()])
    }

    // MARK: The service thread

    /// Starts the service thread, which creates the context with `configure`'s settings and then
    /// services it until `stopRequested`. Blocks until the context exists (or failed).
    func startLoop(name: String, configure: @escaping (inout lws_context_creation_info) -> Void,
                   created: @escaping (OpaquePointer) -> Void) throws {
        let started = DispatchSemaphore(value: 0)
        let failure = Box<String?>(nil)
        lws_set_log_level(lwsLogLevel, LWSEndpoint.emit)
        let hooks = UncheckedSendable((configure, created))
        try thread.start(name: name, stackSize: 1 << 20) { [self] in
            let (configure, created) = hooks.value
            var info = lws_context_creation_info()
            info.gid = -1
            info.uid = -1
            info.user = Unmanaged.passUnretained(self).toOpaque()
            configure(&info)
            // lws on an epoll loop of ours (libev); lws's own poll() where that cannot be had.
            let loop = self.eventLoop == .epoll && LWSEventLoop.epollAvailable ? pk_ev_loop_new() : nil
            if let loop {
                info.options |= pk_option_libev
                info.foreign_loops = self.keep([Optional(loop)])
            }
            guard let context = lws_create_context(&info) else {
                if let loop { pk_ev_loop_destroy(loop) }
                // lws says no more; both causes have been seen (an SRE's pass found the second named
                // as the first).
                failure.value = "libwebsockets could not create its context (is the port in use, or the open-file "
                    + "limit, ulimit -n, too low?\(self.contextFailureHint))"
                started.signal()
                return
            }
            self.context = context
            self.servedBy = loop == nil ? .poll : .epoll
            self.inbox.attach(LWSContextPointer(raw: context))
            created(context)
            // lws's due events run within a second even on a quiet loop (shim.h `pk_ev_tick_start`).
            let tick = loop.map { pk_ev_tick_start($0, context, 1.0) } ?? nil
            started.signal()
            while !self.stopRequested {
                self.turn &+= 1
                if let loop {
                    _ = pk_ev_run_once(loop)
                } else if lws_service(context, 0) < 0 {
                    break
                }
                self.writeTurnEnd()
                self.flushWakes()
                if self.stopRequested { break }
                self.serviceTick()
                self.flushWakes()
            }
            if let loop { pk_ev_tick_stop(loop, tick) }
            for work in self.inbox.detach() { work() }
            self.flushWakes()
            lws_context_destroy(context)
            if let loop { pk_ev_loop_destroy(loop) }
            self.context = nil
            self.loopEnded()
            self.stopped.signal()
        }
        started.wait()
        if let message = failure.value {
            stopped.signal()
            throw WebSocketTransportError.startFailed(message)
        }
    }

    /// More to say when lws cannot create the context (a subclass's own settings that also fail it),
    /// starting with a space.
    var contextFailureHint: String { "" }

    /// The reason lws logged for the last certificate it did not trust ("unable to get local issuer
    /// certificate"), taken: "" when none. Its "SSL error: …" line is kept instead of printed (`emit`),
    /// and a client's failure says it in its own words (lws's own error for it reads "connect SSL err
    /// 1: error:00000001:lib(0)…").
    static func takeTLSReason() -> String {
        tlsReason.withLock { reason in
            defer { reason = "" }
            return reason
        }
    }

    private static let tlsReason = Mutex("")

    /// lws's log lines (any thread), to stderr through lws's own emitter (its timestamp, level letter
    /// and colour), but for a certificate check's reason, kept for `takeTLSReason`.
    private static let emit: @convention(c) (Int32, UnsafePointer<CChar>?) -> Void = { level, line in
        guard let line else { return }
        let text = String(cString: line)
        guard let found = text.range(of: "SSL error: ") else { return lwsl_emit_stderr(level, line) }
        var reason = text[found.upperBound...].prefix { $0 != "(" && $0 != "\n" }
        while reason.last == " " { reason = reason.dropLast() }
        tlsReason.withLock { $0 = String(reason.prefix(200)) }
    }

    /// lws's own stderr logging (process-wide, set when a loop starts): errors and warnings for a
    /// server (the hub logs through swift-log); a client says what went wrong in its own words.
    var lwsLogLevel: Int32 { 1 | 2 }  // LLL_ERR | LLL_WARN

    /// Idle WebSocket connections get a ping after `pingSeconds` and are dropped after `hangupSeconds`
    /// without traffic (lws's retry-and-idle policy). Kept for the context's lifetime.
    func makeIdlePolicy(pingSeconds: Int, hangupSeconds: Int) -> UnsafeMutablePointer<lws_retry_bo_t> {
        var policy = lws_retry_bo_t()
        policy.secs_since_valid_ping = UInt16(clamping: pingSeconds)
        policy.secs_since_valid_hangup = UInt16(clamping: hangupSeconds)
        return keep([policy])
    }

    /// Called after every `lws_service` return on the service thread.
    func serviceTick() {}

    /// Called on the service thread once its loop has ended and the context is gone.
    func loopEnded() {}

    /// Waits (off the service thread) until the loop has ended, the context is destroyed and the thread
    /// itself is gone (joined): after this returns, nothing of the endpoint runs, so a process may exit
    /// without its thread's last steps (OpenSSL's per-thread clean-up among them) racing `exit`'s.
    public func waitUntilStopped() async {
        await stopped.wait()
        thread.join()
    }

    /// Ends the loop without draining (service thread or any thread).
    public func stopNow() {
        perform { [self] in stopRequested = true }
    }

    // MARK: Callbacks

    /// Answers one lws callback (service thread): the inbox wakeup and the peer's close frame (both roles);
    /// the rest goes to `lws_callback_http_dummy`.
    func callback(wsi: OpaquePointer, reason: lws_callback_reasons, user: UnsafeMutableRawPointer?,
                  input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            inbox.drain()
            return 0
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            // A close body is empty or starts with a 2-byte code (RFC 6455 5.5.1); lws checks codes but
            // would echo a 1-byte body: fail the connection instead (Autobahn 7.3.2).
            if length == 1 { return -1 }
            if let connection = connection(of: wsi) {
                connection.peerClosed = true
                recordPeerClose(connection, input: input, length: length)
            }
            return 0
        default:
            break
        }
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }

    /// A connection's queue overflowed (it is being closed as a slow consumer).
    func sendQueueOverflowed(_ connection: WebSocketConnection) {}

    // MARK: Connection objects on wsis

    /// Registers `connection` (the endpoint owns it) and points the wsi at it, unretained.
    func attach(_ connection: WebSocketConnection, to wsi: OpaquePointer?) {
        connections[connection.id] = connection
        if let wsi { lws_set_opaque_user_data(wsi, Unmanaged.passUnretained(connection).toOpaque()) }
    }

    func connection(of wsi: OpaquePointer) -> WebSocketConnection? {
        guard let pointer = lws_get_opaque_user_data(wsi) else { return nil }
        return Unmanaged<WebSocketConnection>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Forgets the connection of a closed wsi; returns it once (nil after).
    func detach(wsi: OpaquePointer) -> WebSocketConnection? {
        guard let connection = connection(of: wsi) else { return nil }
        lws_set_opaque_user_data(wsi, nil)
        return forget(connection)
    }

    /// Removes `connection` from the endpoint; returns it if it was still there.
    func forget(_ connection: WebSocketConnection) -> WebSocketConnection? {
        guard connections.removeValue(forKey: connection.id) != nil else { return nil }
        connection.detach()
        return connection
    }

    /// Reads a header (service thread, during the handshake callbacks).
    func header(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
        let length = Int(lws_hdr_total_length(wsi, token))
        guard length > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        let copied = lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token)
        guard copied >= 0 else { return nil }
        return String(decoding: buffer.prefix(Int(copied)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func peerAddress(_ wsi: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        guard lws_get_peer_simple(wsi, &buffer, buffer.count) != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Handles a received fragment for `connection`; calls `deliver` with whole messages.
    func received(_ connection: WebSocketConnection, wsi: OpaquePointer, input: UnsafeMutableRawPointer?,
                  length: Int, deliver: (WebSocketConnection, WebSocketConnection.ReceiveResult, Bool) -> Void) {
        let bytes = UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length)
        let final = lws_is_final_fragment(wsi) != 0 && lws_remaining_packet_payload(wsi) == 0
        let binary = lws_frame_is_binary(wsi) != 0
        let result = connection.receive(bytes, final: final)
        if case .partial = result { return }
        deliver(connection, result, binary)
    }

    /// Records the peer's close frame payload (code + reason).
    func recordPeerClose(_ connection: WebSocketConnection, input: UnsafeMutableRawPointer?, length: Int) {
        guard let input, length >= 2 else { return }
        let bytes = UnsafeRawBufferPointer(start: input, count: length)
        connection.peerCloseCode = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        connection.peerCloseReason = String(decoding: bytes.dropFirst(2), as: UTF8.self)
    }
}

/// The one C callback lws calls; finds the Swift endpoint through the context's user pointer.
func lwsCallback(
    _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
    _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
    guard let wsi, let context = lws_get_context(wsi), let owner = lws_context_user(context) else {
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
    let endpoint = Unmanaged<LWSEndpoint>.fromOpaque(owner).takeUnretainedValue()
    return endpoint.callback(wsi: wsi, reason: reason, user: user, input: input, length: length)
}

/// Errors of the transport.
public enum WebSocketTransportError: Error, CustomStringConvertible, Sendable {
    case startFailed(String)
    case badURL(String)

    public var description: String {
        switch self {
        case .startFailed(let message): message
        case .badURL(let url): "not a ws:// URL: \(url)"
        }
    }
}

/// A value set on one thread and read on another after a semaphore handshake.
final class Box<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// A one-shot signal that async code can wait for.
final class Stopped: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func signal() {
        lock.lock()
        done = true
        let waiting = waiters
        waiters = []
        lock.unlock()
        for waiter in waiting { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            lock.lock()
            if done {
                lock.unlock()
                continuation.resume()
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }
}

/// A thread that can be joined, once, by whoever waits for it first (`Foundation.Thread` cannot be
/// joined: a process that exits just after its loop ends would race the thread's own exit). Not joined
/// by the time its owner goes, it is detached.
final class JoinableThread: @unchecked Sendable {
    private let lock = NSLock()
    private var handle: pthread_t?

    /// Starts `body` on a new thread named `name` (up to 15 bytes are kept).
    func start(name: String, stackSize: Int, _ body: @escaping () -> Void) throws {
        let context = Unmanaged.passRetained(ThreadBody {
            pk_set_thread_name(name)
            body()
        }).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, stackSize)
        var created = pthread_t()
        let status = pthread_create(&created, &attributes, { raw in
            Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(context).release()
            throw WebSocketTransportError.startFailed("cannot start the thread \(name): \(String(cString: strerror(status)))")
        }
        lock.withLock { handle = created }
    }

    /// Waits until the thread has exited (at once if it has, or was joined already). Never call it on
    /// the thread itself. Holds the lock while joining, so a second caller returns only after the join.
    func join() {
        lock.withLock {
            guard let running = handle else { return }
            handle = nil
            if pthread_equal(running, pthread_self()) != 0 {
                pthread_detach(running)
            } else {
                pthread_join(running, nil)
            }
        }
    }

    /// Lets the thread's resources go when it exits, if nobody joined it.
    func detach() {
        lock.withLock {
            guard let running = handle else { return }
            handle = nil
            pthread_detach(running)
        }
    }
}

private final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}
