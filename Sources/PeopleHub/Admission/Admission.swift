import PeopleCore
import WebSocketTransport

/// Who may open a WebSocket here: the path names a room, the page's origin is allowed, the hub is not
/// draining and is under its connection limits, in total and per IP address. Keeps the counts of open
/// connections those limits need. A pure value: the hub asks, then reports opens and closes. (The hub
/// keeps it behind a lock: upgrades are decided on whichever service thread serves them.)
struct Admission {
    /// Why an upgrade is refused (the client sees the handshake fail).
    enum Refusal: String, Equatable, Sendable {
        case draining
        case notARoom = "not a room path"
        case origin = "auth.allowedOrigins"
        case host = "auth.mode open: Host"
        case maxConnections = "limits.maxConnections"
        case maxConnectionsPerIP = "limits.maxConnectionsPerIP"

        /// What the client is answered instead of `101 Switching Protocols`.
        var answer: UpgradeRefusal {
            switch self {
            case .draining:
                UpgradeRefusal(status: 503, reason: "the hub is shutting down; connect again in a moment")
            case .notARoom:
                UpgradeRefusal(status: 404, reason: "not a room: WebSocket paths are /v1/rooms/ROOM (1 to 64 of A-Z a-z 0-9 _ . -)")
            case .origin:
                UpgradeRefusal(status: 403, reason: "pages of this origin may not connect to this hub (auth.allowedOrigins)")
            case .host:
                UpgradeRefusal(status: 403, reason: Admission.hostRefusal)
            case .maxConnections:
                UpgradeRefusal(status: 503, reason: "the hub has all the connections it takes (limits.maxConnections); try again later")
            case .maxConnectionsPerIP:
                UpgradeRefusal(status: 429, reason: "too many connections from this address (limits.maxConnectionsPerIP)")
            }
        }
    }

    /// Origins whose pages may connect besides the hub's own (`*`: any).
    let allowedOrigins: [String]
    /// `auth.mode: open`: anyone may act as anyone, so a request from this machine must be addressed to
    /// it by a loopback name (`hostAllowed`).
    let open: Bool
    let maxConnections: Int
    /// 0: no limit.
    let maxConnectionsPerIP: Int
    /// Open connections.
    private(set) var openConnections = 0
    /// The hub is shutting down: no new connections.
    var draining = false
    /// Open connections per peer address (only kept when `maxConnectionsPerIP` is set).
    private var byIP: [String: Int] = [:]

    init(allowedOrigins: [String], open: Bool = false, limits: HubLimits) {
        self.allowedOrigins = allowedOrigins
        self.open = open
        maxConnections = limits.maxConnections
        maxConnectionsPerIP = limits.maxConnectionsPerIP
    }

    /// Whether the upgrade may go ahead: nil, or why not.
    func refusal(of request: UpgradeRequest) -> Refusal? {
        if draining { return .draining }
        guard RoomName(path: request.path) != nil else { return .notARoom }
        guard Self.originAllowed(request.origin, host: request.host, allowed: allowedOrigins) else { return .origin }
        guard !open || Self.hostAllowed(request.host, peer: request.peer, allowed: allowedOrigins) else { return .host }
        guard openConnections < maxConnections else { return .maxConnections }
        if maxConnectionsPerIP > 0, byIP[request.peer, default: 0] >= maxConnectionsPerIP { return .maxConnectionsPerIP }
        return nil
    }

    mutating func opened(peer: String) {
        openConnections += 1
        if maxConnectionsPerIP > 0 { byIP[peer, default: 0] += 1 }
    }

    mutating func closed(peer: String) {
        openConnections -= 1
        if maxConnectionsPerIP > 0, let count = byIP[peer] { byIP[peer] = count > 1 ? count - 1 : nil }
    }

    /// Whether a page from `origin` may open a WebSocket here: no `Origin` (not a browser), the hub's
    /// own origin (its host and port as the browser addressed it), or one listed in `allowed`
    /// (`*`: any). A page of another site must not act for a user who happens to have the hub open.
    /// Whether a peer address is this machine (127.0.0.0/8, ::1, or IPv4 mapped into IPv6).
    static func isLoopback(_ peer: String) -> Bool {
        let address = peer.hasPrefix("::ffff:") ? String(peer.dropFirst(7)) : peer
        return address == "::1" || address.hasPrefix("127.")
    }

    /// In open mode, whether a request may be served for its `Host`: a peer on this machine (a browser
    /// here, where any page may send requests) must name the hub `localhost`, `*.localhost` or a loopback
    /// address, or a host listed in `allowed` as `http://HOST` / `https://HOST`. A page of another site
    /// whose name it points at 127.0.0.1 (DNS rebinding) is then refused; so are its simple cross-site
    /// requests, by `originAllowed`. Peers on other machines are what the operator exposed the hub to.
    static func hostAllowed(_ host: String?, peer: String, allowed: [String]) -> Bool {
        guard isLoopback(peer) else { return true }
        guard let host = host?.lowercased(), !host.isEmpty else { return true }  // HTTP/1.0: no name given
        // Listed hosts only: `*` lets any page's origin in, not any name a page on this machine may
        // give the hub (with it, a rebinding page's name was let in, and in open mode was an admin).
        if allowed.contains(where: { ["http://\(host)", "https://\(host)"].contains($0.lowercased()) }) {
            return true
        }
        let name: Substring
        if host.hasPrefix("[") {
            name = host.dropFirst().prefix { $0 != "]" }
        } else {
            name = host.split(separator: ":", maxSplits: 1).first ?? ""
        }
        return name == "localhost" || name.hasSuffix(".localhost") || name == "::1"
            || (name.hasPrefix("127.") && name.allSatisfy { $0.isNumber || $0 == "." })
    }

    static let hostRefusal = "auth.mode is open: a request from this machine must address the hub as localhost or a loopback address, or as a host listed in auth.allowedOrigins (a page of another site may be pointing its name at this machine)"

    /// Whether a request comes from a web page of another origin than the hub's own (`Origin` other
    /// than `http(s)://` + `Host`); false without an `Origin` (not a browser, or a same-origin GET).
    static func isCrossOrigin(_ origin: String?, host: String?) -> Bool {
        guard let origin, !origin.isEmpty else { return false }
        let normalized = normalized(origin)
        guard let host = host?.lowercased() else { return true }
        return normalized != "http://\(host)" && normalized != "https://\(host)"
    }

    static func originAllowed(_ origin: String?, host: String?, allowed: [String]) -> Bool {
        guard let origin, !origin.isEmpty else { return true }
        if allowed.contains("*") { return true }
        let normalized = normalized(origin)
        if allowed.contains(where: { $0.lowercased() == normalized }) { return true }
        return !isCrossOrigin(origin, host: host)
    }

    /// An origin as compared: lower case, without a trailing `/`.
    private static func normalized(_ origin: String) -> String {
        let lowered = origin.lowercased()
        return lowered.hasSuffix("/") ? String(lowered.dropLast()) : lowered
    }
}
