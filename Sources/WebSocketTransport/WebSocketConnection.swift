import CLibWebSockets
import Foundation
import Synchronization

/// One WebSocket connection, server or client side.
///
/// Two threads may have a part in it. Its service thread (the thread of the lws context that
/// accepted it) owns the socket: the queue, reassembly, writes. Its public face (`send`, `close`,
/// `setDeadline`, `isClosing`, `context`) is used on its *home* thread: the service thread the
/// server's delegate chose for its path (`WebSocketServerDelegate.homeThread`), where the delegate
/// hears of it. When home and service thread are the same the calls go straight through; otherwise
/// each call is handed to the service thread, in order, woken once per round of the home thread
/// (`LWSEndpoint.post(_:to:)`), and `isClosing` is the home thread's own record of what it asked for
/// and heard.
/// Outgoing messages wait in a bounded queue written in batches when lws says the socket is
/// writable; a consumer that falls further behind than the bounds is closed with 1008, not buffered
/// without end. Incoming fragments are reassembled up to `maxMessageBytes`.
public final class WebSocketConnection: @unchecked Sendable {
    /// Unique within the process.
    public let id: UInt64
    /// The request path (`/v1/rooms/abc`), without the query.
    public let path: String
    /// The request query (`a=1&b=2`), empty when there is none.
    public let query: String
    /// The peer's address as lws reports it (an IP).
    public let peer: String
    /// The `Origin` header, when the client sent one.
    public let origin: String?
    /// Whatever the owner wants to keep with the connection (the hub keeps its session here).
    public var context: AnyObject?
    /// The close code the peer sent, if it closed first (client side reads the hub's 1001 here).
    public internal(set) var peerCloseCode: UInt16?
    /// Service thread only: the peer's close frame has arrived (nothing more is written, as lws would
    /// never call WRITEABLE again), and the round in which a frame of this connection was last read.
    var peerClosed = false
    var lastReadTurn: UInt64 = .max
    /// The peer's close reason text.
    public internal(set) var peerCloseReason: String?
    /// Client side: the HTTP status a server answered instead of `101 Switching Protocols` (its reason
    /// for refusing the upgrade), if it did.
    public internal(set) var refusedStatus: Int?
    /// True once a close was requested or the connection is gone; sends are then ignored. (The owner's
    /// view: for a connection served on another thread, what the owner asked for or was told.)
    public var isClosing: Bool { servedAtHome ? closing : closingSeenAtHome }
    /// Service thread: a close was requested or the socket is gone.
    private var closing = false
    /// Home thread, for a connection served on another thread: the owner closed it, or heard it close.
    var closingSeenAtHome = false

    let isClient: Bool
    /// Server side without an extension that rewrites frames (permessage-deflate): several queued
    /// messages may go to the socket as one write of ready-made frames.
    var mayCoalesce = false
    var wsi: OpaquePointer?
    /// The bounds this connection was opened with.
    public let limits: WebSocketLimits
    private var queue: [OutboundMessage] = []
    private var queueHead = 0
    /// Where the replaceable message still waiting sits in `queue`, if one does.
    private var replaceableIndex: Int?
    public private(set) var queuedBytes = 0
    var closeCode: UInt16 = 1000
    var closeReason: String = ""
    private var abandonQueue = false
    var receiving: [UInt8] = []
    var receivingOversized = 0
    /// The endpoint whose thread serves the socket.
    unowned let owner: LWSEndpoint
    /// The endpoint whose thread uses the public face (the delegate's calls for it run there).
    unowned let home: LWSEndpoint

    init(id: UInt64, wsi: OpaquePointer?, path: String, query: String, peer: String, origin: String?,
         isClient: Bool, limits: WebSocketLimits, owner: LWSEndpoint, home: LWSEndpoint? = nil) {
        self.home = home ?? owner
        self.id = id
        self.wsi = wsi
        self.path = path
        self.query = query
        self.peer = peer
        self.origin = origin
        self.isClient = isClient
        self.limits = limits
        self.owner = owner
    }

    /// Number of messages waiting to be written.
    public var queuedCount: Int { queue.count - queueHead }

    /// Which of the server's service threads serves it.
    public var serviceThread: Int { owner.serviceThreadIndex }

    /// Which of the server's service threads is its home (where the delegate hears of it).
    public var homeThread: Int { home.serviceThreadIndex }

    /// Whether the service thread is the home thread.
    private var servedAtHome: Bool { owner === home }

    /// Queues `message` and asks lws for a writable callback.
    ///
    /// Returns false (and closes the connection with 1008 "slow consumer") when the queue is already
    /// at its message or byte bound; returns false without effect when the connection is closing.
    /// Served on another thread: hands the message there and returns true (an overflow there is
    /// reported to the owner like any other).
    @discardableResult
    public func send(_ message: OutboundMessage) -> Bool {
        guard servedAtHome else { return handOver { $0.enqueue(message) } }
        return enqueue(message)
    }

    /// `send` on the service thread.
    @discardableResult
    func enqueue(_ message: OutboundMessage) -> Bool {
        guard !closing, wsi != nil else { return false }
        if message.isReplaceable, let index = replaceableIndex {
            // Not written yet (writes only move past it): the newer state takes its place.
            queuedBytes += message.count - queue[index].count
            queue[index] = message
            return true
        }
        if queuedCount >= limits.sendQueueMessages || queuedBytes + message.count > limits.sendQueueBytes {
            owner.sendQueueOverflowed(self)
            closeHere(code: 1008, reason: "slow consumer", discardQueued: true)
            return false
        }
        if message.isReplaceable { replaceableIndex = queue.count }
        queue.append(message)
        queuedBytes += message.count
        if queuedCount == 1, let wsi {
            if owner.writesAtTurnEnd && !isClient { owner.turnEndWrites.append(self) } else { lws_callback_on_writable(wsi) }
        }
        return true
    }

    /// Writes what is queued now, outside lws's WRITEABLE callback (the end of a service round):
    /// whatever the socket does not take, lws keeps and sends when it can; what is left of the queue
    /// waits for WRITEABLE as before.
    func writeAtTurnEnd() {
        guard let wsi, !closing, !peerClosed, queuedCount > 0 else { return }
        // lws's WRITEABLE handling goes first (it sends what it holds before calling us) while it still
        // holds part of an earlier write (a write now stalled the connection on epoll).
        if lws_partial_buffered(wsi) != 0 { lws_callback_on_writable(wsi); return }
        guard lastReadTurn == owner.turn else {
            if writeQueued() < 0 { lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_SEND, -1) }
            return
        }
        // Read this round: lws may owe the peer a pong for a ping it read, which comes before what
        // the peer's frames led to (Autobahn 5.6, 5.19). lws's own POLLOUT handling, run now, sends
        // it first and leaves POLLOUT asked for so that WRITEABLE follows; with nothing owed it calls
        // WRITEABLE at once: the ack to a writer goes out this round, not after a turn of epoll. (The
        // real event that read the connection this round started lws's idle watcher on the libev loop,
        // which runs next round whatever this leaves: rx flow let go, TLS data already decrypted.)
        // 1: lws closed and freed the connection there. Anything else with messages left (a pong went
        // first, or lws could not take the call) waits for WRITEABLE as before.
        if let context = owner.context, pk_service_writable(context, wsi) == 1 { return }
        writeWhenWritable()
    }

    /// Leaves what is queued to lws's WRITEABLE callback.
    func writeWhenWritable() {
        guard let wsi, !closing, queuedCount > 0 else { return }
        lws_callback_on_writable(wsi)
    }

    /// Closes with `code`: after the queued messages are written, or at once with `discardQueued`.
    ///
    /// A hard timeout closes the socket anyway if the peer stops reading.
    public func close(code: UInt16 = 1000, reason: String = "", discardQueued: Bool = false) {
        guard servedAtHome else {
            if handOver({ $0.closeHere(code: code, reason: reason, discardQueued: discardQueued) }) { closingSeenAtHome = true }
            return
        }
        closeHere(code: code, reason: reason, discardQueued: discardQueued)
    }

    /// `close` on the service thread.
    func closeHere(code: UInt16, reason: String, discardQueued: Bool) {
        guard !closing, let wsi else { return }
        closing = true
        closeCode = code
        closeReason = String(decoding: reason.utf8.prefix(120), as: UTF8.self)
        if discardQueued { abandonQueue = true; dropQueue() }
        lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_SEND, 5)
        lws_callback_on_writable(wsi)
    }

    /// Closes the connection with `code` and `reason` (as `close` does: what is queued first, then the
    /// close frame; lws drops the socket 5 s later if the peer never answers) unless the deadline is
    /// cleared (`seconds` 0) within `seconds`. The hub uses it for the hello timeout.
    public func setDeadline(seconds: Int, code: UInt16 = 1008, reason: String = "") {
        guard servedAtHome else {
            handOver { $0.setDeadlineHere(seconds: seconds, code: code, reason: reason) }
            return
        }
        setDeadlineHere(seconds: seconds, code: code, reason: reason)
    }

    /// The home thread, for a connection served on another: runs `work` with it on its serving
    /// thread, after everything handed over before; false (nothing done) once home closed it or
    /// heard it close.
    @discardableResult
    private func handOver(_ work: @escaping @Sendable (WebSocketConnection) -> Void) -> Bool {
        guard !closingSeenAtHome else { return false }
        home.post({ [self] in work(self) }, to: owner)
        return true
    }

    /// The close a deadline set and not yet cleared will start (service thread).
    private var deadlineClose: (code: UInt16, reason: String)?

    private func setDeadlineHere(seconds: Int, code: UInt16, reason: String) {
        guard let wsi, !closing else { return }
        if seconds <= 0 {
            deadlineClose = nil
            lws_set_timer_usecs(wsi, -1)
        } else {
            deadlineClose = (code, reason)
            lws_set_timer_usecs(wsi, lws_usec_t(seconds) * 1_000_000)
        }
    }

    /// lws's timer for this connection fired (LWS_CALLBACK_TIMER, service thread): the deadline passed.
    func deadlinePassed() {
        guard let close = deadlineClose else { return }
        deadlineClose = nil
        closeHere(code: close.code, reason: close.reason, discardQueued: false)
    }

    private func dropQueue() {
        // A queue that empties after every broadcast would otherwise allocate again for the next one:
        // keep a small buffer (a burst's big one is given back).
        queue.removeAll(keepingCapacity: queue.capacity <= 64)
        queueHead = 0
        queuedBytes = 0
        replaceableIndex = nil
    }

    /// Writes up to a batch of queued messages (WRITEABLE callback). Returns -1 to close.
    func writeQueued() -> Int32 {
        guard let wsi else { return -1 }
        if closing && (abandonQueue || queuedCount == 0) {
            var reason = Array(closeReason.utf8)
            reason.withUnsafeMutableBufferPointer { buffer in
                lws_close_reason(wsi, lws_close_status(rawValue: UInt32(closeCode)), buffer.baseAddress, buffer.count)
            }
            return -1
        }
        var written = 0
        while queueHead < queue.count, written < 32 {
            // One send() for what is waiting instead of one per message, when it can be.
            let taken = mayCoalesce && queue.count - queueHead > 1 ? writeCoalesced(wsi) : 0
            if taken < 0 { return -1 }
            if taken == 0 {
                let message = queue[queueHead]
                let result: Int32
                let protocolKind = message.isBinary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT
                if isClient {
                    // Client frames are masked in place: write a private copy.
                    let bytes = UnsafeBufferPointer(start: message.payload, count: message.count)
                    let copy = message.isBinary ? OutboundMessage(binary: bytes) : OutboundMessage(text: bytes)
                    result = lws_write(wsi, copy.payload, copy.count, protocolKind)
                } else {
                    result = lws_write(wsi, message.payload, message.count, protocolKind)
                }
                if result < 0 { return -1 }
                advanceHead()
            }
            written += 1
            // lws_send_pipe_choked is a poll() syscall: ask only when there is more to write.
            if queueHead < queue.count, lws_send_pipe_choked(wsi) != 0 { break }
        }
        if queueHead == queue.count {
            dropQueue()
        } else if queueHead > 64 && queueHead * 2 > queue.count {
            queue.removeFirst(queueHead)
            replaceableIndex = replaceableIndex.map { $0 - queueHead }
            queueHead = 0
        }
        if queuedCount > 0 || closing { lws_callback_on_writable(wsi) }
        return 0
    }

    /// Most bytes of frames put together for one write (under 64 KiB: see `writeCoalesced`).
    static let coalescedWriteBytes = 32 * 1024

    /// Frames queued messages from the head, as many as fit `coalescedWriteBytes` (at least two, else
    /// nothing), into the endpoint's buffer and writes them with one raw `lws_write` (server frames
    /// are not masked: a 2- or 4-byte header, RFC 6455 5.2). Returns how many were taken, 0 when
    /// fewer than two fit, -1 when the write failed.
    private func writeCoalesced(_ wsi: OpaquePointer) -> Int {
        // Everything that fits is under 64 KiB: a 7-bit or a 16-bit length.
        func headerCount(_ message: OutboundMessage) -> Int { message.count < 126 ? 2 : 4 }
        var total = 0
        var taken = 0
        while queueHead + taken < queue.count {
            let message = queue[queueHead + taken]
            guard total + headerCount(message) + message.count <= Self.coalescedWriteBytes else { break }
            total += headerCount(message) + message.count
            taken += 1
        }
        guard taken > 1 else { return 0 }
        let start = owner.coalescingBuffer.advanced(by: pk_lws_pre).assumingMemoryBound(to: UInt8.self)
        var frame = start
        for message in queue[queueHead..<(queueHead + taken)] {
            frame[0] = message.isBinary ? 0x82 : 0x81
            if headerCount(message) == 2 {
                frame[1] = UInt8(message.count)
            } else {
                frame[1] = 126
                frame[2] = UInt8(message.count >> 8)
                frame[3] = UInt8(message.count & 0xFF)
            }
            frame += headerCount(message)
            frame.update(from: message.payload, count: message.count)
            frame += message.count
        }
        if lws_write(wsi, start, total, pk_lws_write_raw) < 0 { return -1 }
        for _ in 0..<taken { advanceHead() }
        return taken
    }

    /// The head message was written: moves past it.
    private func advanceHead() {
        if replaceableIndex == queueHead { replaceableIndex = nil }
        queuedBytes -= queue[queueHead].count
        queueHead += 1
    }

    // MARK: Frames handed to the home thread

    /// Frames read here and handed to the home thread that it has not handled yet (a connection served
    /// by another thread than its home). At `pauseReadingAt` this thread stops reading the socket
    /// (lws rx flow control: the peer's TCP window fills) until the home is down to
    /// `resumeReadingAt`. One thread reads, handles and answers in turn, which paces a client by
    /// itself; two would otherwise let a flooding client fill the home's inbox without bound, and
    /// get thousands of answers queued in one go (a slow consumer, not a rate-limited one).
    private let framesAtHome = Atomic<Int>(0)
    private let readingPaused = Atomic<Bool>(false)
    static let pauseReadingAt = 32
    static let resumeReadingAt = 8

    /// Service thread: the most frames ever waiting at home at once (for the tests).
    private(set) var mostFramesAtHome = 0

    /// Service thread: a frame goes to the home thread.
    func handingFrameToHome() {
        let waiting = framesAtHome.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue
        mostFramesAtHome = max(mostFramesAtHome, waiting)
        guard waiting >= Self.pauseReadingAt, !readingPaused.load(ordering: .sequentiallyConsistent), let wsi else { return }
        readingPaused.store(true, ordering: .sequentiallyConsistent)
        lws_rx_flow_control(wsi, 0)
        // The home may have caught up before it could see the pause.
        resumeReading()
    }

    /// Home thread: a handed-over frame was handled.
    func frameHandledAtHome() {
        let waiting = framesAtHome.wrappingSubtract(1, ordering: .sequentiallyConsistent).newValue
        guard waiting == Self.resumeReadingAt, readingPaused.load(ordering: .sequentiallyConsistent) else { return }
        home.post({ [self] in resumeReading() }, to: owner)
    }

    /// Service thread: reads again if reading is paused and the home has caught up.
    private func resumeReading() {
        guard readingPaused.load(ordering: .sequentiallyConsistent),
              framesAtHome.load(ordering: .sequentiallyConsistent) <= Self.resumeReadingAt else { return }
        readingPaused.store(false, ordering: .sequentiallyConsistent)
        if let wsi { lws_rx_flow_control(wsi, 1) }
    }

    /// Appends a received fragment. Returns the whole message when this fragment completes it,
    /// `.oversized(total)` once for a message over the limit (its remaining fragments are dropped).
    func receive(_ bytes: UnsafeRawBufferPointer, final: Bool) -> ReceiveResult {
        if receivingOversized > 0 {
            receivingOversized += bytes.count
            if final { let total = receivingOversized; receivingOversized = 0; return .oversized(total) }
            return .partial
        }
        if receiving.count + bytes.count > limits.maxMessageBytes {
            receivingOversized = receiving.count + bytes.count
            receiving = []
            if final { let total = receivingOversized; receivingOversized = 0; return .oversized(total) }
            return .partial
        }
        receiving.append(contentsOf: bytes)
        guard final else { return .partial }
        let message = receiving
        receiving = []
        return .message(message)
    }

    enum ReceiveResult {
        case partial
        case message([UInt8])
        case oversized(Int)
    }

    /// The socket is gone (CLOSED): nothing more is written.
    func detach() {
        wsi = nil
        closing = true
        dropQueue()
        receiving = []
    }
}

/// Bounds for one connection.
public struct WebSocketLimits: Sendable, Hashable {
    /// Largest reassembled message accepted; bigger ones are reported and dropped.
    public var maxMessageBytes: Int
    /// Most messages waiting to be written before the consumer counts as too slow.
    public var sendQueueMessages: Int
    /// Most bytes waiting to be written before the consumer counts as too slow.
    public var sendQueueBytes: Int

    public init(maxMessageBytes: Int = 1 << 20, sendQueueMessages: Int = 4096, sendQueueBytes: Int = 16 << 20) {
        self.maxMessageBytes = maxMessageBytes
        self.sendQueueMessages = sendQueueMessages
        self.sendQueueBytes = sendQueueBytes
    }
}
