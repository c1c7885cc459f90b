import Dispatch
import Metrics
import PeopleCore
import WebSocketTransport

/// The hub's plain HTTP routes: health, metrics, and the HTTP API (Hub+RoomRoutes.swift,
/// Hub+AdminRoutes.swift). Anything no route matches is a file under the web root (or 404; JSON under
/// `/v1/`).
extension Hub {
    func addRoutes() {
        routes.add("GET", "/healthz") { [unowned self] _ throws in
            if draining { throw HTTPFailure.unavailable("draining") }
            if let problem = storeHealth.problem { throw HTTPFailure.unavailable("store unavailable: \(problem)") }
            return HTTPResponse(status: 200, text: "ok\n")
        }
        routes.add("GET", "/metrics") { [unowned self] call throws in
            guard configuration.metricsEnabled, let renderMetrics else {
                throw HTTPFailure.notFound("metrics are off (metrics.enabled)")
            }
            try refuseRebound(call)  // the metrics (room counts, webhook endpoints) are not for a rebound page
            if let token = configuration.metricsToken { try Self.checkBearer(call, token: token) }
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                                body: Array(renderMetrics().utf8))
        }
        addRoomRoutes()
        addAdminRoutes()
    }

    /// `/metrics` behind `metrics.tokenFile`: the request must say `Authorization: Bearer TOKEN`. The
    /// comparison takes the same time wherever the bytes differ (no timing clue to the token).
    static func checkBearer(_ call: HTTPCall, token: [UInt8]) throws {
        let given = Array((call.bearerToken ?? "").utf8)
        var difference = UInt8(given.count == token.count ? 0 : 1)
        for (index, byte) in token.enumerated() { difference |= byte ^ (index < given.count ? given[index] : ~byte) }
        guard difference == 0 else {
            throw HTTPFailure.unauthorized("send Authorization: Bearer with the token of metrics.tokenFile")
        }
    }

    /// Whether `handle` takes a request: a route's pattern matches its path, or it is under `/v1/`.
    /// The transport asks on whichever service thread read the request (the routes are fixed once
    /// the hub is made; nothing else is read).
    public func claims(_ request: HTTPRequest) -> Bool {
        routes.matches(request.path) || request.path.hasPrefix("/v1/")
    }

    /// A plain HTTP request (the transport's callback, on the service thread): a route takes it, a
    /// path under `/v1/` that none matches is 404 `not-found`, anything else is left for a file. Under
    /// `/v1/`, a page of an origin `auth.allowedOrigins` lets in may read the answer, and `OPTIONS` is
    /// a browser's preflight (CrossOrigin.swift).
    public func handle(_ exchange: any HTTPExchange) -> Bool {
        let request = exchange.request
        let api = request.path.hasPrefix("/v1/")
        let granted = api ? CrossOrigin.grant(request, allowed: configuration.allowedOrigins) : []
        if api, request.method == "OPTIONS" {
            // A path no route takes: a page of an origin let in is granted the API's methods, so that its
            // request gets the readable 404 `not-found` rather than a preflight its browser reports as a
            // network failure (a CORS pass: a typo in a path looked like a refusal).
            var methods = routes.methods(for: request.path)
            if methods.isEmpty, !granted.isEmpty { methods = CrossOrigin.apiMethods }
            if !methods.isEmpty {
                let metered = MeteredExchange(exchange, metrics: httpMetrics)
                metered.route = "OPTIONS (preflight)"
                metered.respond(CrossOrigin.preflight(request, methods: methods, granted: granted))
                return true
            }
        }
        let metered = MeteredExchange(granted.isEmpty ? exchange : HeaderedExchange(exchange, headers: granted + [CrossOrigin.exposed]),
                                      metrics: httpMetrics)
        if routes.route(metered, matched: { metered.route = $0 }) { return true }
        guard exchange.request.path.hasPrefix("/v1/") else { return false }
        metered.route = "\(exchange.request.method) (no route)"
        metered.respond(HTTPFailure.notFound("no route \(exchange.request.method) \(exchange.request.path)")
            .response(json: true))
        return true
    }
}

/// An exchange that counts its answer (`peoplekeeper_http_requests_total{route,status}`) and times it
/// from the request read to the answer (`peoplekeeper_http_request_duration_seconds{route}`).
final class MeteredExchange: HTTPExchange {
    let inner: any HTTPExchange
    let metrics: HTTPMetrics
    let started = DispatchTime.now().uptimeNanoseconds
    var route = "other"

    init(_ inner: any HTTPExchange, metrics: HTTPMetrics) {
        self.inner = inner
        self.metrics = metrics
    }

    var request: HTTPRequest { inner.request }
    var isOpen: Bool { inner.isOpen }

    func respond(_ response: HTTPResponse) {
        guard inner.isOpen else { return }
        metrics.record(route: route, status: response.status, nanoseconds: DispatchTime.now().uptimeNanoseconds - started)
        inner.respond(response)
    }
}

/// The HTTP API's series, made on first use per route and status (service thread only).
final class HTTPMetrics {
    private var counters: [String: Counter] = [:]
    private var timers: [String: Metrics.Timer] = [:]

    func record(route: String, status: Int, nanoseconds: UInt64) {
        let key = "\(route) \(status)"
        let counter = counters[key] ?? Counter(label: "peoplekeeper_http_requests_total",
                                               dimensions: [("route", route), ("status", String(status))])
        counters[key] = counter
        counter.increment()
        let timer = timers[route] ?? Metrics.Timer(label: "peoplekeeper_http_request_duration_seconds",
                                                   dimensions: [("route", route)])
        timers[route] = timer
        timer.recordNanoseconds(Int64(nanoseconds))
    }
}
