import WebSocketTransport

/// Calls of the HTTP API from web pages of other origins (CORS, the Fetch standard): a page of one
/// cluster node reading a room that another node holds (the restore question's `?at=` read goes to the
/// node the page's WebSocket was sent to), or the page of a site the operator listed calling the API.
///
/// The rule is `auth.allowedOrigins`, the list that already lets those pages open the room's
/// WebSocket: an answer to a page of a listed origin (or of the hub's own) names that origin back in
/// `Access-Control-Allow-Origin`; a page of any other origin gets no such header, so its browser keeps
/// the answer from it, and its preflight is refused. No credentials are granted (the API reads no
/// cookies: a token goes in `Authorization`, which the page sets itself).
enum CrossOrigin {
    /// The request headers a page may send: a token, and a JSON body.
    static let allowedHeaders = "Authorization, Content-Type"
    /// On an answer (not a preflight) to a page let in: the headers it may read besides the simple ones.
    static let exposed = HTTPResponse.Header("Access-Control-Expose-Headers", "Allow, Location, Retry-After, WWW-Authenticate")
    /// The methods the API's routes take, granted to a preflight for a path no route takes.
    static let apiMethods = ["GET", "HEAD", "POST", "PUT", "DELETE"]
    /// How long a browser may keep a preflight's answer, in seconds.
    static let maxAge = "600"

    /// What lets the page that sent `request` read the answer: its origin back and `Vary: Origin`, when
    /// `Origin` is one `allowed` lets in; none without an `Origin` (not a browser) or for an origin not
    /// let in. An answer adds `exposed`; a preflight, the methods and headers (`preflight`).
    static func grant(_ request: HTTPRequest, allowed: [String]) -> [HTTPResponse.Header] {
        guard let origin = request.headers["origin"], !origin.isEmpty,
              Admission.originAllowed(origin, host: request.headers["host"], allowed: allowed) else { return [] }
        return [.init("Access-Control-Allow-Origin", origin), .init("Vary", "Origin")]
    }

    /// The answer to `OPTIONS` on an API path whose routes take `methods`, `granted` being `grant`'s for
    /// it: a browser's preflight from a page of an origin let in is 200 (no body) with the methods and
    /// headers it may use; from any other origin it is 403 `forbidden`. Without an `Origin` it is an
    /// ordinary `OPTIONS`: 200 with `Allow`. (Not 204: the transport writes a `Content-Length`, which a
    /// 204 may not have.)
    static func preflight(_ request: HTTPRequest, methods: [String], granted: [HTTPResponse.Header]) -> HTTPResponse {
        let allow = (methods + ["OPTIONS"]).joined(separator: ", ")
        guard let origin = request.headers["origin"], !origin.isEmpty else {
            return HTTPResponse(status: 200, body: [], headers: [.init("Allow", allow)])
        }
        guard !granted.isEmpty else {
            return HTTPFailure.forbidden("pages of \(origin) may not call this hub (auth.allowedOrigins)")
                .response(json: true)
        }
        return HTTPResponse(status: 200, body: [], headers: granted + [
            .init("Access-Control-Allow-Methods", allow), .init("Access-Control-Allow-Headers", allowedHeaders),
            .init("Access-Control-Max-Age", maxAge), .init("Allow", allow),
        ])
    }
}

/// An exchange whose answer carries `headers` too (`CrossOrigin.grant`'s).
final class HeaderedExchange: HTTPExchange {
    let inner: any HTTPExchange
    let headers: [HTTPResponse.Header]

    init(_ inner: any HTTPExchange, headers: [HTTPResponse.Header]) {
        self.inner = inner
        self.headers = headers
    }

    var request: HTTPRequest { inner.request }
    var isOpen: Bool { inner.isOpen }

    func respond(_ response: HTTPResponse) {
        var response = response
        response.headers += headers
        inner.respond(response)
    }
}
