import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import PeopleCore
import Synchronization

/// A webhook receiver for tests: a real HTTP/1.1 server on 127.0.0.1, port 0 (loopback only), that
/// records every POST and answers as `reply` says (a status, after a delay, or never).
final class Receiver: Sendable {
    struct Request: Sendable {
        let body: [UInt8]
        let json: JSON
        let contentType: String?
        let signature: String?
        /// What the receiver answered (nil: it hung).
        let answered: Int?

        var id: String { json["id"].flatMap { if case .string(let s) = $0 { s } else { nil } } ?? "" }
        var event: String { json["event"].flatMap { if case .string(let s) = $0 { s } else { nil } } ?? "" }
        var rev: Int? { if case .int(let rev) = json["rev"] { rev } else { nil } }
        var delivered: Bool { answered.map { (200..<300).contains($0) } ?? false }
    }

    enum Reply: Sendable {
        case status(Int, afterMilliseconds: Int64 = 0)
        /// The status with a body of this many bytes.
        case large(Int, bytes: Int)
        case hang
    }

    /// Decides each answer from the request and how many came before it.
    let reply: Mutex<@Sendable (Request, Int) -> Reply>
    private let log = Mutex<[Request]>([])
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let channel = Mutex<(any Channel)?>(nil)
    let url: String

    init(path: String = "/hook", reply: @escaping @Sendable (Request, Int) -> Reply = { _, _ in .status(200) }) throws {
        self.reply = Mutex(reply)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        let recorder = Recorder()
        let bound = try bootstrap.childChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                try channel.pipeline.syncOperations.addHandler(ReceiverHandler(recorder: recorder))
            }
        }.bind(host: "127.0.0.1", port: 0).wait()
        url = "http://127.0.0.1:\(bound.localAddress!.port!)\(path)"
        channel.withLock { $0 = bound }
        recorder.receiver.withLock { $0 = WeakReceiver(self) }
    }

    /// Every request so far, in arrival order.
    var requests: [Request] { log.withLock { $0 } }

    /// The requests answered with a 2xx, in arrival order.
    var delivered: [Request] { requests.filter(\.delivered) }

    fileprivate func answer(_ request: Request) -> Reply {
        let count = log.withLock { $0.count }
        return reply.withLock { $0 }(request, count)
    }

    fileprivate func record(_ request: Request) { log.withLock { $0.append(request) } }

    /// Waits (polling) until `condition` holds of the requests, at most `seconds`.
    @discardableResult
    func wait(seconds: Double = 30, until condition: ([Request]) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(requests) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition(requests)
    }

    func stop() {
        _ = try? channel.withLock { $0 }?.close().wait()
        try? group.syncShutdownGracefully()
    }

    /// Whether `signature` (`t=…,v1=…`) is `secret`'s HMAC-SHA256 of `"<t>.<body>"`.
    static func verify(signature: String?, body: [UInt8], secret: [UInt8]) -> Bool {
        guard let signature else { return false }
        var fields: [Substring: Substring] = [:]
        for part in signature.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            if pair.count == 2 { fields[pair[0]] = pair[1] }
        }
        guard let t = fields["t"], Int(t) != nil, let v1 = fields["v1"] else { return false }
        let code = HMAC<SHA256>.authenticationCode(for: Array("\(t).".utf8) + body, using: SymmetricKey(data: secret))
        let hex = code.map { String(format: "%02x", $0) }.joined()
        return hex == v1
    }
}

private struct WeakReceiver: Sendable {
    weak var receiver: Receiver?
    init(_ receiver: Receiver) { self.receiver = receiver }
}

/// Lets the handlers reach the receiver (set once it is bound).
private final class Recorder: Sendable {
    let receiver = Mutex<WeakReceiver?>(nil)
}

/// Collects one request at a time and answers it on the channel's event loop.
private final class ReceiverHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let recorder: Recorder
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(recorder: Recorder) { self.recorder = recorder }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(var buffer):
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard let head, let receiver = recorder.receiver.withLock({ $0?.receiver }) else { return }
            let json = (try? JSON.parse(body)) ?? .null
            let probe = Receiver.Request(body: body, json: json, contentType: head.headers.first(name: "Content-Type"),
                                         signature: head.headers.first(name: "PeopleKeeper-Signature"), answered: nil)
            let reply = receiver.answer(probe)
            switch reply {
            case .hang:
                receiver.record(probe)
            case .large(let status, let bytes):
                receiver.record(Receiver.Request(body: body, json: json, contentType: probe.contentType,
                                                 signature: probe.signature, answered: status))
                var headers = HTTPHeaders()
                headers.add(name: "Content-Length", value: String(bytes))
                context.write(self.wrapOutboundOut(.head(HTTPResponseHead(version: head.version,
                    status: HTTPResponseStatus(statusCode: status), headers: headers))), promise: nil)
                let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 64 * 1024)
                var left = bytes
                while left > 0 {
                    let part = min(left, chunk.count)
                    context.write(self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: chunk.prefix(part))))), promise: nil)
                    left -= part
                }
                context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
            case .status(let status, let delay):
                receiver.record(Receiver.Request(body: body, json: json, contentType: probe.contentType,
                                                 signature: probe.signature, answered: status))
                let loop = context.eventLoop.assumeIsolated()
                let respond = { [context] in
                    var headers = HTTPHeaders()
                    headers.add(name: "Content-Length", value: "0")
                    let response = HTTPResponseHead(version: head.version, status: HTTPResponseStatus(statusCode: status),
                                                    headers: headers)
                    context.write(self.wrapOutboundOut(.head(response)), promise: nil)
                    context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
                }
                if delay > 0 { loop.scheduleTask(in: .milliseconds(delay), respond) } else { respond() }
            }
        }
    }
}
