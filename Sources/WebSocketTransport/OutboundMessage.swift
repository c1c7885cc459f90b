import CLibWebSockets

/// One encoded message (text, or binary for the echo test mode), ready for `lws_write`, shareable by
/// any number of connections.
///
/// The payload sits after `LWS_PRE` bytes of headroom that lws fills with the frame header, so one
/// buffer serves every receiver of a broadcast: the hub encodes a revision once and queues the same
/// message on each connection. Only the service thread writes it (lws writes the header into the
/// headroom), so sharing is safe without locks. Immutable after creation otherwise.
public final class OutboundMessage: @unchecked Sendable {
    /// Bytes of payload (the JSON text).
    public let count: Int
    /// Sent as a binary frame (else text).
    public let isBinary: Bool
    /// A state message that a newer replaceable message makes obsolete (presence): while it still waits
    /// in a connection's queue, queueing another replaceable message puts the new one in its place
    /// instead of behind it, so a slow reader never holds more than one.
    public let isReplaceable: Bool
    let storage: UnsafeMutableRawPointer

    /// Copies `bytes` (UTF-8 text) into a new buffer with lws headroom.
    public convenience init(text bytes: some Collection<UInt8>, replaceable: Bool = false) {
        self.init(bytes, binary: false, replaceable: replaceable)
    }

    /// Copies `bytes` into a new buffer with lws headroom, to go as one binary frame.
    public convenience init(binary bytes: some Collection<UInt8>) {
        self.init(bytes, binary: true, replaceable: false)
    }

    private init(_ bytes: some Collection<UInt8>, binary: Bool, replaceable: Bool) {
        isBinary = binary
        isReplaceable = replaceable
        count = bytes.count
        storage = UnsafeMutableRawPointer.allocate(byteCount: pk_lws_pre + max(count, 1), alignment: 16)
        let payload = storage.advanced(by: pk_lws_pre).assumingMemoryBound(to: UInt8.self)
        _ = UnsafeMutableBufferPointer(start: payload, count: count).initialize(from: bytes)
    }

    /// Convenience for text built as a String.
    public convenience init(_ text: String) {
        self.init(text: Array(text.utf8))
    }

    deinit { storage.deallocate() }

    /// The payload, after the headroom.
    var payload: UnsafeMutablePointer<UInt8> {
        storage.advanced(by: pk_lws_pre).assumingMemoryBound(to: UInt8.self)
    }

    /// The payload as bytes (for tests and logs).
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: payload, count: count)) }
}
