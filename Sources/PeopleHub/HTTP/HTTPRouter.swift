import WebSocketTransport

/// Plain HTTP on the hub's port: a method and a path pattern lead to a handler; a handler answers or
/// throws an `HTTPFailure`, which becomes its status and text here, in one place. Paths no route
/// matches are left to the transport (files under the web root, else 404).
///
/// Patterns are `/`-separated: a literal segment, `:name` (any one segment, handed to the handler as
/// a parameter) or a final `*` (any rest, possibly empty).
struct HTTPRouter {
    typealias Handler = (_ parameters: [String: String]) throws(HTTPFailure) -> HTTPResponse

    private enum Segment: Equatable {
        case literal(String)
        case parameter(String)
        case rest
    }

    private struct Route {
        let method: String
        let segments: [Segment]
        let handler: Handler
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
        routes.append(Route(method: method, segments: segments, handler: handler))
    }

    /// The response of the first route matching `method` and `path`, or nil when none does.
    func response(method: String, path: String) -> HTTPResponse? {
        let parts = Self.split(path)
        for route in routes where route.method == method {
            guard let parameters = Self.match(route.segments, parts) else { continue }
            do {
                return try route.handler(parameters)
            } catch {
                return HTTPResponse(status: error.status, text: error.message + "\n")
            }
        }
        return nil
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

/// Why an HTTP request is not answered with 200, as a status and a sentence for the body.
struct HTTPFailure: Error, Equatable {
    var status: Int
    var message: String

    static func notFound(_ message: String) -> HTTPFailure { .init(status: 404, message: message) }
    static func unavailable(_ message: String) -> HTTPFailure { .init(status: 503, message: message) }
    static func upgradeRequired(_ message: String) -> HTTPFailure { .init(status: 426, message: message) }
}
