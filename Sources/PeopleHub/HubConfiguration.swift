import PeopleCore

/// What the hub needs to know to run rooms: the seed, the undo policy and the limits.
///
/// Built by `peoplekeeper-hub` from `Config/peoplekeeper.yaml` (see docs/CONFIG.md for every key).
public struct HubConfiguration: Sendable {
    /// People a room starts with when it is first joined.
    public var seed: PeopleModel
    /// Undo and history policy of every room (its `maxPeople` is `limits.maxPeoplePerRoom`).
    public var roomPolicy: RoomPolicy
    public var limits: HubLimits
    /// Whether `/metrics` answers.
    public var metricsEnabled: Bool
    /// When set, `/metrics` answers only a request with `Authorization: Bearer` and this token
    /// (`metrics.tokenFile`); nil: anyone who reaches the port.
    public var metricsToken: [UInt8]?
    /// A snapshot of a room is stored after this many revisions (restart replays at most about this
    /// many records per room).
    public var snapshotEvery: Int
    /// A room with no connection for this long is written out (snapshot) and dropped from memory.
    public var unloadAfterSeconds: Int
    /// `auth.mode: token`: every hello needs a token this authority accepts (nil: `open`, any user
    /// name, everyone an editor).
    public var auth: TokenAuthority?
    /// Origins (`scheme://host[:port]`) whose pages may connect, besides the hub's own; `*` allows any.
    /// A connection without an `Origin` header (not a browser) is always allowed.
    public var allowedOrigins: [String] = []

    public init(seed: PeopleModel = .tutorialSeed, roomPolicy: RoomPolicy = RoomPolicy(),
                limits: HubLimits = HubLimits(), metricsEnabled: Bool = true, snapshotEvery: Int = 1_000,
                unloadAfterSeconds: Int = 60, auth: TokenAuthority? = nil) {
        self.auth = auth
        self.seed = seed
        self.roomPolicy = roomPolicy
        self.limits = limits
        self.metricsEnabled = metricsEnabled
        self.snapshotEvery = snapshotEvery
        self.unloadAfterSeconds = unloadAfterSeconds
    }
}

/// Bounds that keep one client, or many, from taking the hub down for the others.
public struct HubLimits: Sendable, Hashable {
    /// Open WebSocket connections in total; upgrades beyond are refused.
    public var maxConnections: Int
    /// Rooms in memory; a `hello` for a new room beyond is answered `room-full`.
    public var maxRooms: Int
    /// People a submit or a PUT of people may leave in a room (`room-full` beyond); 0 = no limit.
    public var maxPeoplePerRoom: Int
    /// Frames per second per connection (a token bucket with a burst of twice this); beyond it a frame
    /// is answered `rate-limited` and dropped; a connection that keeps on for a second more is closed.
    public var opsPerSecond: Int
    /// Seconds a connection may stay open without a successful `hello`.
    public var helloTimeoutSeconds: Int
    /// Disconnected sessions kept per room for `resume` (oldest forgotten first).
    public var keptSessionsPerRoom: Int
    /// Open WebSocket connections from one IP address; upgrades beyond are refused. 0 = no limit.
    public var maxConnectionsPerIP: Int = 0
    /// Bytes of heap in use (malloc's) above which no room is loaded or created (`room-full`) and idle
    /// rooms are unloaded at once, until the heap is back under 90 % of it. 0 = no bound.
    public var maxMemoryBytes: Int = 0

    public init(maxConnections: Int = 10_000, maxRooms: Int = 1_000, maxPeoplePerRoom: Int = 1_000,
                opsPerSecond: Int = 100, helloTimeoutSeconds: Int = 10, keptSessionsPerRoom: Int = 256) {
        self.maxConnections = maxConnections
        self.maxRooms = maxRooms
        self.maxPeoplePerRoom = maxPeoplePerRoom
        self.opsPerSecond = opsPerSecond
        self.helloTimeoutSeconds = helloTimeoutSeconds
        self.keptSessionsPerRoom = keptSessionsPerRoom
    }
}
