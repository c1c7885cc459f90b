import WebSocketTransport

/// The hub's plain HTTP routes. Anything no route matches is a file under the web root (or 404).
extension Hub {
    func addRoutes() {
        routes.add("GET", "/healthz") { [unowned self] _ throws(HTTPFailure) in
            if draining { throw .unavailable("draining") }
            if let problem = storeHealth.problem { throw .unavailable("store unavailable: \(problem)") }
            return HTTPResponse(status: 200, text: "ok\n")
        }
        routes.add("GET", "/metrics") { [unowned self] _ throws(HTTPFailure) in
            guard configuration.metricsEnabled, let renderMetrics else {
                throw .notFound("metrics are off (metrics.enabled)")
            }
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                                body: Array(renderMetrics().utf8))
        }
        routes.add("GET", "/v1/*") { _ throws(HTTPFailure) in
            throw .upgradeRequired("this is a WebSocket endpoint: connect with ws://")
        }
    }

    /// A plain HTTP request (the transport answers GETs only): a route's answer, or nil for a file.
    public func response(for request: HTTPRequest) -> HTTPResponse? {
        routes.response(method: "GET", path: request.path)
    }
}
