import PeopleCore
import WebSocketTransport

/// Plain HTTP on the hub's port: a method and a path pattern lead to a handler; a handler answers now
/// (returns a response), later (returns nil and answers through `call.exchange`), or throws an
/// `HTTPFailure`, which becomes its status, headers and body here, in one place. A path some route
/// matches with another method is 405; paths no route matches are left to the transport (files under
/// the web root, else 404). `HEAD` takes a `GET` route; the transport leaves the body out.
///
/// Patterns are `/`-separated: a literal segment, `:name` (any one segment, handed to the handler as
/// a parameter) or a final `*` (any rest, possibly empty).
struct HTTPRouter {
    typealias Handler = (_ call: HTTPCall) throws -> HTTPResponse?

    private enum Segment: Equatable {
        case literal(String)
        case parameter(String)
        case rest
    }

    private struct Route {
        let method: String
        let pattern: String
        let segments: [Segment]
        let handler: Handler

        var name: String { "\(method) \(pattern)" }
    }

    private var routes: [Route] = []

    /// Adds a route; earlier routes win where several match.
    mutating func add(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        let segments = Self.split(pattern).map { part -> Segment in
            if part == "*" { return .rest }
            if part.hasPrefix(":") { return .parameter(String(part.dropFirst())) }
            return .literal(String(part))
        }
        precondition(!segments.dropLast().contains(Segment.rest), "`*` ends a pattern: \(pattern)")
        routes.append(Route(method: method, pattern: pattern, segments: segments, handler: handler))
    }

    /// Runs the first route matching the exchange's method and path; false when no route's pattern
    /// matches the path (the transport then serves a file). `matched` hears the route's
    /// `METHOD pattern` first (for metrics).
    func route(_ exchange: any HTTPExchange, matched: (String) -> Void = { _ in }) -> Bool {
        let request = exchange.request
        let parts = Self.split(request.path)
        var allowed: [String] = []
        for route in routes {
            guard let parameters = Self.match(route.segments, parts) else { continue }
            guard route.method == request.method || (request.method == "HEAD" && route.method == "GET") else {
                if !allowed.contains(route.method) { allowed.append(route.method) }
                if route.method == "GET", !allowed.contains("HEAD") { allowed.append("HEAD") }
                continue
            }
            matched(route.name)
            let call = HTTPCall(exchange: exchange, parameters: parameters)
            do {
                if let response = try route.handler(call) { exchange.respond(response) }
            } catch {
                exchange.respond(HTTPFailure.from(error).response(json: request.path.hasPrefix("/v1/")))
            }
            return true
        }
        guard !allowed.isEmpty else { return false }
        matched("\(request.method) (not allowed)")
        var failure = HTTPFailure(status: 405, code: "method-not-allowed",
                                  message: "\(request.method) is not a method of \(request.path)")
        // Under /v1/ every path with a route also takes OPTIONS (a browser's preflight, CrossOrigin.swift).
        if request.path.hasPrefix("/v1/") { allowed.append("OPTIONS") }
        failure.headers = [.init("Allow", allowed.joined(separator: ", "))]
        exchange.respond(failure.response(json: request.path.hasPrefix("/v1/")))
        return true
    }

    /// Whether some route's pattern matches `path` (whatever its method): `route` takes it.
    func matches(_ path: String) -> Bool {
        let parts = Self.split(path)
        return routes.contains { Self.match($0.segments, parts) != nil }
    }

    /// The methods the routes matching `path` take, in the order they were added (`HEAD` after a
    /// `GET`); empty when no route matches it.
    func methods(for path: String) -> [String] {
        let parts = Self.split(path)
        var methods: [String] = []
        for route in routes where Self.match(route.segments, parts) != nil {
            for method in route.method == "GET" ? ["GET", "HEAD"] : [route.method] where !methods.contains(method) {
                methods.append(method)
            }
        }
        return methods
    }

    private static func split(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { $0 }
    }

    private static func match(_ segments: [Segment], _ parts: [Substring]) -> [String: String]? {
        var parameters: [String: String] = [:]
        for (index, segment) in segments.enumerated() {
            switch segment {
            case .rest:
                return parameters
            case .literal(let literal):
                guard index < parts.count, parts[index] == literal else { return nil }
            case .parameter(let name):
                guard index < parts.count, !parts[index].isEmpty else { return nil }
                parameters[name] = String(parts[index])
            }
        }
        return parts.count == segments.count ? parameters : nil
    }
}

/// One routed request: the exchange to answer and the pattern's parameters.
struct HTTPCall {
    let exchange: any HTTPExchange
    let parameters: [String: String]

    var request: HTTPRequest { exchange.request }

    /// The token of `Authorization: Bearer TOKEN` (the scheme in any case, white space around the
    /// token dropped); nil without one. The HTTP API's tokens and `/metrics`'s read it alike.
    var bearerToken: String? {
        let header = request.headers["authorization"] ?? ""
        guard header.lowercased().hasPrefix("bearer ") else { return nil }
        let token = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    /// A query argument as a whole number, nil when absent; not a number (or outside `range`) is
    /// `bad-message`.
    /// A yes-or-no query argument: `true` / `1` or `false` / `0` (nil when absent); anything else is
    /// `bad-message`, as for a number.
    func boolean(_ name: String) throws -> Bool? {
        guard let text = request.query(name) else { return nil }
        switch text.lowercased() {
        case "true", "1": return true
        case "false", "0": return false
        default: throw HTTPFailure.badMessage("query argument \(name) must be true or false (got \(text))")
        }
    }

    func integer(_ name: String, in range: ClosedRange<Int> = Int.min...Int.max) throws -> Int? {
        guard let text = request.query(name) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            let bounds = switch (range.lowerBound, range.upperBound) {
            case (Int.min, Int.max): ""
            case (let low, Int.max): " of at least \(low)"
            case (let low, let high): " from \(low) to \(high)"
            }
            throw HTTPFailure.badMessage("query argument \(name) must be a whole number\(bounds) (got \(text))")
        }
        return value
    }
}

/// Why an HTTP request is not answered with 2xx: a status, a code a client can switch on (the
/// protocol's error codes, and the HTTP API's own), a sentence, and headers (`Retry-After`, `Location`).
struct HTTPFailure: Error, Equatable {
    var status: Int
    var code: String
    var message: String
    var headers: [HTTPResponse.Header] = []

    init(status: Int, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// Any error thrown on the way to an answer: an `HTTPFailure` as it is, anything else a 500.
    ///
    /// (Handlers throw untyped: escaping closures with typed throws crashed in Swift 6.3's thunks.)
    static func from(_ error: any Error) -> HTTPFailure {
        (error as? HTTPFailure) ?? HTTPFailure(status: 500, code: "server-error", message: "\(error)")
    }

    /// A protocol error as the HTTP API answers it (the product contract's HTTP API §1).
    init(_ error: ProtocolError) {
        self.init(status: Self.status(of: error.code), code: error.code.rawValue, message: error.message)
        // RFC 9110 §11.6.1: a 401 names the scheme it wants.
        if error.code == .unauthorized { headers = [.init("WWW-Authenticate", "Bearer")] }
    }

    static func status(of code: ErrorCode) -> Int {
        switch code {
        case .badJSON, .badMessage, .unsupportedProtocol, .notHello: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .noRoom, .noEntry: 404
        case .staleBase: 409
        case .tooLarge: 413
        case .invalidOp: 422
        case .rateLimited: 429
        case .roomFull: 503
        case .serverError: 500
        }
    }

    /// `room-full` from a room's people limit (`limits.maxPeoplePerRoom`): `409`, as the room's state
    /// refuses it and waiting does not change that (a backend's pass: a `503` is retried for good by
    /// generic clients). The limit on rooms (`limits.maxRooms`) and memory stays `503`: it clears.
    static func peopleLimit(_ error: ProtocolError) -> HTTPFailure {
        var failure = HTTPFailure(error)
        failure.status = 409
        return failure
    }

    static func notFound(_ message: String) -> HTTPFailure { .init(status: 404, code: "not-found", message: message) }
    static func unavailable(_ message: String) -> HTTPFailure { .init(status: 503, code: "unavailable", message: message) }
    /// 503 while the hub drains, with `Retry-After: 1` (another node takes the request now, this one
    /// after its restart), as a 429 has.
    static var shuttingDown: HTTPFailure {
        var failure = unavailable("the hub is shutting down; try again")
        failure.headers = [.init("Retry-After", "1")]
        return failure
    }
    static func badMessage(_ message: String) -> HTTPFailure { .init(ProtocolError(.badMessage, message)) }
    static func badJSON(_ message: String) -> HTTPFailure { .init(ProtocolError(.badJSON, message)) }
    static func unauthorized(_ message: String) -> HTTPFailure { .init(ProtocolError(.unauthorized, message)) }
    static func forbidden(_ message: String) -> HTTPFailure { .init(ProtocolError(.forbidden, message)) }
    static func noRoom(_ room: String) -> HTTPFailure { .init(ProtocolError(.noRoom, "there is no room \(room)")) }

    /// The answer: `{"error":{"code","message"}}` on the API's paths, the sentence elsewhere.
    func response(json: Bool) -> HTTPResponse {
        var response = json
            ? HTTPResponse(status: status, contentType: "application/json", body: JSON.object([
                "error": .object(["code": .string(code), "message": .string(message)]),
            ]).bytes)
            : HTTPResponse(status: status, text: message + "\n")
        response.headers = headers
        return response
    }
}

extension HTTPResponse {
    /// A JSON answer.
    static func json(_ value: JSON, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: value.bytes)
    }
}

extension HTTPFailure: CustomStringConvertible {
    var description: String { "\(code): \(message)" }
}
