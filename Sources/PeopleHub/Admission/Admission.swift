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
            case .maxConnections:
                UpgradeRefusal(status: 503, reason: "the hub has all the connections it takes (limits.maxConnections); try again later")
            case .maxConnectionsPerIP:
                UpgradeRefusal(status: 429, reason: "too many connections from this address (limits.maxConnectionsPerIP)")
            }
        }
    }

    /// Origins whose pages may connect besides the hub's own (`*`: any).
    let allowedOrigins: [String]
    let maxConnections: Int
    /// 0: no limit.
    let maxConnectionsPerIP: Int
    /// Open connections.
    private(set) var open = 0
    /// The hub is shutting down: no new connections.
    var draining = false
    /// Open connections per peer address (only kept when `maxConnectionsPerIP` is set).
    private var byIP: [String: Int] = [:]

    init(allowedOrigins: [String], limits: HubLimits) {
        self.allowedOrigins = allowedOrigins
        maxConnections = limits.maxConnections
        maxConnectionsPerIP = limits.maxConnectionsPerIP
    }

    /// Whether the upgrade may go ahead: nil, or why not.
    func refusal(of request: UpgradeRequest) -> Refusal? {
        if draining { return .draining }
        guard RoomName(path: request.path) != nil else { return .notARoom }
        guard Self.originAllowed(request.origin, host: request.host, allowed: allowedOrigins) else { return .origin }
        guard open < maxConnections else { return .maxConnections }
        if maxConnectionsPerIP > 0, byIP[request.peer, default: 0] >= maxConnectionsPerIP { return .maxConnectionsPerIP }
        return nil
    }

    mutating func opened(peer: String) {
        open += 1
        if maxConnectionsPerIP > 0 { byIP[peer, default: 0] += 1 }
    }

    mutating func closed(peer: String) {
        open -= 1
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

    static func originAllowed(_ origin: String?, host: String?, allowed: [String]) -> Bool {
        guard let origin, !origin.isEmpty else { return true }
        if allowed.contains("*") { return true }
        let lowered = origin.lowercased()
        let normalized = lowered.hasSuffix("/") ? String(lowered.dropLast()) : lowered
        if allowed.contains(where: { $0.lowercased() == normalized }) { return true }
        guard let host = host?.lowercased() else { return false }
        return normalized == "http://\(host)" || normalized == "https://\(host)"
    }
}
