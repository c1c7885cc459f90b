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
        routes.add("GET", "/metrics") { [unowned self] _ throws in
            guard configuration.metricsEnabled, let renderMetrics else {
                throw HTTPFailure.notFound("metrics are off (metrics.enabled)")
            }
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                                body: Array(renderMetrics().utf8))
        }
        addRoomRoutes()
        addAdminRoutes()
    }

    /// A plain HTTP request (the transport's callback, on the service thread): a route takes it, a
    /// path under `/v1/` that none matches is 404 `not-found`, anything else is left for a file.
    public func handle(_ exchange: any HTTPExchange) -> Bool {
        if routes.route(exchange) { return true }
        guard exchange.request.path.hasPrefix("/v1/") else { return false }
        exchange.respond(HTTPFailure.notFound("no route \(exchange.request.method) \(exchange.request.path)")
            .response(json: true))
        return true
    }
}
