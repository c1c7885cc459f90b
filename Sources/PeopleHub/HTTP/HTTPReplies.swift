import PeopleCore
import WebSocketTransport

/// Where a room's answers to HTTP callers go: the core addresses them to a session (a user's agent
/// session for writes, a one-off reader id for reads) like any other; this stands in the room's
/// connections for that session, so the answers take the same path as a WebSocket's — held behind
/// the commits before them, in order — and turns each into the HTTP response of the request waiting
/// longest. Service thread only.
final class HTTPReplies: ClientConnection {
    let peer = "http"
    let path: String
    var context: AnyObject?
    var isClosing: Bool { false }
    var maxMessageBytes: Int { Int.max }
    /// Requests waiting for their answers, in the order they reached the room; each answer goes to the
    /// first. `finished` runs when none is left (the room forgets this stand-in).
    private var waiting: [(exchange: any HTTPExchange, shape: Shape)] = []
    var finished: (() -> Void)?

    /// How an answer becomes a response body.
    enum Shape {
        /// The frame's fields without `type` and `seq`.
        case fields
        /// `201 {"room","rev"}` (an import's records are durable).
        case created(room: String)
    }

    init(path: String) { self.path = path }

    var isIdle: Bool { waiting.isEmpty }

    func expect(_ exchange: any HTTPExchange, shape: Shape = .fields) {
        waiting.append((exchange, shape))
    }

    /// `exchange` is answered elsewhere now (its request went to the store first and is asked again).
    func forget(_ exchange: any HTTPExchange) {
        waiting.removeAll { $0.exchange === exchange }
        if waiting.isEmpty { finished?() }
    }

    /// The exchange waiting longest gets its answer.
    func answer(_ response: HTTPResponse) {
        guard !waiting.isEmpty else { return }
        let first = waiting.removeFirst()
        first.exchange.respond(response)
        if waiting.isEmpty { finished?() }
    }

    @discardableResult func send(_ message: OutboundMessage) -> Bool {
        guard let first = waiting.first else { return true }
        let bytes = message.bytes
        answer(Self.response(to: bytes, shape: first.shape))
        return true
    }

    func close(code: UInt16, reason: String) {
        // The room was dropped (the store failed, the leases went): whoever still waits hears why.
        fail(HTTPFailure(status: 503, code: "unavailable", message: "the room stopped: \(reason); try again"))
    }

    /// Every request still waiting gets `failure` (a deleted room's: `404 no-room`, as a request that
    /// came after the deletion; a 503 "try again" sent the same key to the room made next under the
    /// name, where it was applied: a tester's pass).
    func fail(_ failure: HTTPFailure) {
        while !waiting.isEmpty { answer(failure.response(json: true)) }
    }

    func setDeadline(seconds: Int, code: UInt16, reason: String) {}

    /// A frame the room sent as the HTTP answer: an `error` becomes its status and error body; anything
    /// else is 200 with the frame's fields but `type` and `seq`.
    static func response(to frame: [UInt8], shape: Shape) -> HTTPResponse {
        guard let json = try? JSON.parse(frame), case .object(let members) = json else {
            return HTTPFailure(status: 500, code: "server-error", message: "an answer could not be read").response(json: true)
        }
        if case .string("error") = json["type"] {
            let code = json["code"].flatMap { if case .string(let c) = $0 { ErrorCode(rawValue: c) } else { nil } } ?? .serverError
            let message = json["message"].flatMap { if case .string(let m) = $0 { m } else { nil } } ?? ""
            // A room answers `room-full` only for its people limit (one it cannot load is refused before).
            var failure = code == .roomFull ? HTTPFailure.peopleLimit(ProtocolError(code, message))
                : HTTPFailure(ProtocolError(code, message))
            if code == .rateLimited { failure.headers = [.init("Retry-After", "1")] }
            return failure.response(json: true)
        }
        switch shape {
        case .fields:
            return .json(.object(members.filter { $0.key != "type" && $0.key != "seq" }))
        case .created(let room):
            return .json(.object(["room": .string(room), "rev": json["rev"] ?? .int(0)]), status: 201)
        }
    }
}
