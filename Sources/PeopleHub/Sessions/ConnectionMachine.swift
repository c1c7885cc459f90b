import PeopleCore

/// One connection's side of the protocol: a pure state machine, shaped like `Room`.
///
/// The hub feeds it what happened to the connection (a frame, a token checked, the room ready or
/// refused, the session replaced, the close) and carries out the small outcome each event returns.
/// Time is a parameter, nothing here touches a socket, and every rule of PROTOCOL.md's parse order
/// and of the rate limit has a test that needs none (`ConnectionMachineTests`).
///
/// States:
///
///     awaitingHello ──hello──▶ authorizing ──token ok──▶ opening ──room joined──▶ joined ◀──▶ fetching
///          ▲                        │                      │  │                     │   (history read
///          └──── room-full ─────────┼──────────────────────┘  │ redirect / load     │    from the store)
///                                   ▼                         ▼ failure             ▼ replaced
///                                closed ◀───────── a fatal error, a close ───── closed
///
/// (`authorizing` is skipped when the hub needs no token.) A machine closed while joined (over its rate,
/// its token expired) keeps the session in `closed(leaving:)` until the close completes, so it leaves the
/// room then (before, it stayed in the room's connections and presence). A token's `exp` ends what it opened: at that
/// time the next frame, or the hub's once-a-second sweep (`expired(now:)`), gets `unauthorized` and the
/// connection closes (1008); the client says hello again with a new token (and may resume the session).
/// Frames that arrive while authorizing,
/// opening or fetching wait, in order, and are handed back when the room is joined or the history
/// has been read (a `restore` or `log` reaching below the room's memory is answered before the
/// session's next frame; so is a `log` or `blame` that waits for a cluster node to be sure of its
/// leases, `RoomHost.readsAwaitingSure`).
struct ConnectionMachine {
    /// A frame as it arrived.
    struct Frame: Sendable {
        var bytes: [UInt8]
        var binary: Bool
    }

    /// A hello on its way to its room, and the frames that arrived after it.
    struct Pending {
        var hello: ClientMessage.Hello
        var user: UserName
        var waiting: [Frame] = []
    }

    enum State {
        case awaitingHello
        case authorizing(Pending)
        case opening(Pending, role: Role)
        case joined(session: SessionID, user: UserName, role: Role)
        case fetching(session: SessionID, user: UserName, role: Role, waiting: [Frame])
        /// Nothing more is read or sent; `leaving`: the session the connection carried, which leaves
        /// the room when the close completes (`closed()`).
        case closed(leaving: SessionID?)
    }

    /// Frames that may wait for a room before the connection is closed (1008).
    static let maxWaitingFrames = 256

    let room: RoomName
    /// Whether a hello needs a token (`auth.mode: token`).
    let needsToken: Bool
    private(set) var state: State = .awaitingHello
    /// When the token that opened the room expires (hub clock, milliseconds); nil without a token.
    private(set) var tokenExpires: Int64?
    private var rate: RateGate

    init(room: RoomName, needsToken: Bool, opsPerSecond: Int, now: Int64) {
        self.room = room
        self.needsToken = needsToken
        rate = RateGate(perSecond: opsPerSecond, now: now)
    }

    /// The session, once joined.
    var session: SessionID? {
        switch state {
        case .joined(let session, _, _), .fetching(let session, _, _, _): session
        default: nil
        }
    }

    // MARK: Frames

    /// What to do with a frame.
    enum FrameOutcome: Equatable {
        /// Nothing (the connection is closing, or the frame was dropped over the rate unanswered).
        case ignore
        /// Answer with this error; `close` (1008) follows when the code is fatal.
        case refuse(ServerMessage.ErrorMessage, close: Bool)
        /// Close the connection.
        case close(code: UInt16, reason: String)
        /// The token that opened the room has expired: send this `unauthorized` and close (1008).
        case expire(ServerMessage.ErrorMessage)
        /// Check the hello's token (off the service thread), then call `tokenChecked`.
        case authorize(token: String, ClientMessage.Hello)
        /// Find the room (load it if needed), then call `joined`, `refused`, `redirected` or `roomFailed`.
        case open(ClientMessage.Hello, role: Role)
        /// The frame waits for the room.
        case wait
        /// Hand the message to the room.
        case deliver(ClientMessage, session: SessionID)
        /// A sequenced request (`submit`, `undo`, `redo`, `restore`) that could not be read: the room
        /// answers it (`Room.receiveUnreadable`: a seq already answered is answered again first).
        case deliverUnreadable(seq: Int, ProtocolError, session: SessionID)
    }

    /// A frame arrived: the rate limit first, then PROTOCOL.md's parse order for the state.
    mutating func receive(_ frame: Frame, now: Int64) -> FrameOutcome {
        if case .closed = state { return .ignore }
        if let expiry = expired(now: now) { return expiry }
        if let refusal = admit(now: now, frame: frame.binary ? nil : frame.bytes) { return refusal }
        return dispatch(frame)
    }

    /// A frame that waited for the room (it was admitted when it arrived), once joined.
    mutating func receiveWaiting(_ frame: Frame) -> FrameOutcome {
        dispatch(frame)
    }

    private mutating func dispatch(_ frame: Frame) -> FrameOutcome {
        switch state {
        case .closed:
            return .ignore
        case .awaitingHello:
            return hello(frame)
        case .authorizing(var pending):
            guard pending.waiting.count < Self.maxWaitingFrames else { return closeAll("too many frames before welcome") }
            pending.waiting.append(frame)
            state = .authorizing(pending)
            return .wait
        case .opening(var pending, let role):
            guard pending.waiting.count < Self.maxWaitingFrames else { return closeAll("too many frames before welcome") }
            pending.waiting.append(frame)
            state = .opening(pending, role: role)
            return .wait
        case .joined(let session, _, _):
            return message(frame, session: session)
        case .fetching(let session, let user, let role, var waiting):
            guard waiting.count < Self.maxWaitingFrames else { return closeAll("too many frames while reading history") }
            waiting.append(frame)
            state = .fetching(session: session, user: user, role: role, waiting: waiting)
            return .wait
        }
    }

    /// A frame over the size limit arrived (dropped unread): `too-large`, after the rate limit.
    mutating func receiveOversized(bytes: Int, limit: Int, now: Int64) -> FrameOutcome {
        if case .closed = state { return .ignore }
        if let expiry = expired(now: now) { return expiry }
        if let refusal = admit(now: now, frame: nil) { return refusal }
        return refuse(ProtocolError(.tooLarge, "frame of \(bytes) bytes is over limits.maxMessageBytes (\(limit))"))
    }

    private mutating func hello(_ frame: Frame) -> FrameOutcome {
        if frame.binary { return refuse(ProtocolError(.notHello, "the first frame must be a hello text frame")) }
        let json: JSON
        do { json = try JSON.parse(frame.bytes) } catch { return refuse(ProtocolError(.badJSON, error.description)) }
        guard ClientMessage.messageType(of: json) == "hello" else {
            return refuse(ProtocolError(.notHello, "send hello first"), seq: Self.seq(of: json))
        }
        let hello: ClientMessage.Hello
        do {
            guard case .hello(let decoded) = try ClientMessage(json: json) else { return .ignore }
            hello = decoded
        } catch {
            return refuse(error)
        }
        let user: UserName
        do { user = try UserName(hello.user) } catch { return refuse(ProtocolError(.badMessage, error.description)) }
        let pending = Pending(hello: hello, user: user)
        guard needsToken else {
            state = .opening(pending, role: .editor)
            return .open(hello, role: .editor)
        }
        guard let token = hello.token, !token.isEmpty else {
            return refuse(ProtocolError(.unauthorized, "this hub needs an access token: give hello.token"))
        }
        state = .authorizing(pending)
        return .authorize(token: token, hello)
    }

    private mutating func message(_ frame: Frame, session: SessionID) -> FrameOutcome {
        if frame.binary { return refuse(ProtocolError(.badMessage, "binary frames are not part of the protocol")) }
        let json: JSON
        do { json = try JSON.parse(frame.bytes) } catch { return refuse(ProtocolError(.badJSON, error.description)) }
        do {
            return .deliver(try ClientMessage(json: json), session: session)
        } catch {
            if let seq = Self.seq(of: json), Self.sequenced.contains(ClientMessage.messageType(of: json) ?? "") {
                return .deliverUnreadable(seq: seq, error, session: session)
            }
            return refuse(error, seq: Self.seq(of: json))
        }
    }

    /// Over the rate a frame is dropped: a `submit`, `undo` or `redo` is answered `rate-limited` with
    /// its seq (its client waits for that answer), any other frame once per burst (the first, then every
    /// tenth). A connection over its rate for more than a second is closed (1008).
    private mutating func admit(now: Int64, frame: [UInt8]?) -> FrameOutcome? {
        switch rate.admit(now: now) {
        case .pass:
            return nil
        case .close:
            return closeAll("rate limit")
        case .drop(let inARow):
            let error = ProtocolError(.rateLimited,
                "over limits.opsPerSecond (\(rate.perSecond)); frame dropped, nothing applied")
            if let frame, let json = try? JSON.parse(frame), let seq = Self.seq(of: json),
               ["submit", "undo", "redo"].contains(ClientMessage.messageType(of: json) ?? "") {
                return .refuse(.init(seq: seq, error), close: false)
            }
            return inARow == 1 || inARow % 10 == 0 ? .refuse(.init(seq: nil, error), close: false) : .ignore
        }
    }

    // MARK: The hello's way to its room

    /// What to do once a token was checked.
    enum AuthOutcome: Equatable {
        case open(ClientMessage.Hello, role: Role)
        case refuse(ServerMessage.ErrorMessage, close: Bool)
        /// Not waiting for a token (the connection closed meanwhile): nothing to do.
        case unexpected
    }

    mutating func tokenChecked(_ result: Result<TokenGrant, AuthFailure>) -> AuthOutcome {
        guard case .authorizing(let pending) = state else { return .unexpected }
        switch result {
        case .success(let grant):
            tokenExpires = grant.expiresMilliseconds
            state = .opening(pending, role: grant.role)
            return .open(pending.hello, role: grant.role)
        case .failure(let failure):
            guard case .refuse(let error, let close) = refuse(ProtocolError(.unauthorized, failure.description))
            else { return .unexpected }
            return .refuse(error, close: close)
        }
    }

    /// The role the hello opens the room with, while it does.
    var opening: (hello: ClientMessage.Hello, role: Role)? {
        if case .opening(let pending, let role) = state { (pending.hello, role) } else { nil }
    }

    /// The room took the hello as `session`: the frames that waited, to receive now in order, or nil
    /// when the connection was not opening (it closed meanwhile).
    mutating func joined(session: SessionID) -> [Frame]? {
        guard case .opening(let pending, let role) = state else { return nil }
        state = .joined(session: session, user: pending.user, role: role)
        return pending.waiting
    }

    /// The hello cannot join (`room-full`): it is answered and the connection waits for another hello;
    /// the frames that waited are dropped. Nil when not opening.
    mutating func refused(_ error: ProtocolError) -> ServerMessage.ErrorMessage? {
        guard case .opening = state else { return nil }
        state = .awaitingHello
        tokenExpires = nil  // the next hello brings its own token
        return .init(seq: nil, error)
    }

    /// The room lives on another node: send `redirect` and close (1000). False when not opening.
    mutating func redirected() -> Bool {
        guard case .opening = state else { return false }
        state = .closed(leaving: nil)
        return true
    }

    /// The store remembers that an admin deleted a room of this name at `deletedAt`
    /// (`PeopleStore.deletion(of:)`), and there is no room of the name now, or (`roomPresent`) there is
    /// one, made again or imported, whose history the hello's revision is not in (`Room.namesOtherHistory`).
    /// A hello that names a revision (a `since` above 0, or revision 0 with its `sinceTime`) made no
    /// later than the deletion comes from a client of the deleted room that was away when it was
    /// deleted: it is closed with 1000 `room deleted`, as the room's connections were, instead of
    /// making the room again from the seed, or being caught up with the room there now (a client
    /// offline at the deletion was, and its queued edits went into the new room; it was told the room
    /// went back). In a room that is there only a `sinceTime` tells when its revision was made. True
    /// when it is turned away; false for a hello that names no revision (it makes the room anew, or
    /// joins the one there), one whose `sinceTime` is after the deletion (a room made again since,
    /// then lost with a store restored from a backup: it went back, as it does without a deletion),
    /// or when not opening.
    mutating func roomWasDeleted(at deletedAt: Int64, roomPresent: Bool = false) -> Bool {
        guard case .opening(let pending, _) = state, let since = pending.hello.since else { return false }
        let sinceTime = pending.hello.sinceTime
        guard since > 0 || sinceTime != nil else { return false }
        if roomPresent {
            guard let sinceTime, sinceTime <= deletedAt else { return false }
        } else {
            guard (sinceTime ?? deletedAt) <= deletedAt else { return false }
        }
        state = .closed(leaving: nil)
        return true
    }

    /// The room cannot be loaded: `server-error`, then close (1011). Nil when not opening.
    mutating func roomFailed() -> ServerMessage.ErrorMessage? {
        guard case .opening = state else { return nil }
        state = .closed(leaving: nil)
        return .init(seq: nil, ProtocolError(.serverError, "room \(room) cannot be loaded; try again later"))
    }

    // MARK: History from the store

    /// The session's message needs revisions from the store (or waits for the node to be sure of its
    /// leases): its later frames wait. False when not joined (already fetching, or closed).
    mutating func fetch() -> Bool {
        guard case .joined(let session, let user, let role) = state else { return false }
        state = .fetching(session: session, user: user, role: role, waiting: [])
        return true
    }

    /// The history was read and the message answered: the frames that waited, to receive in order.
    /// Nil when not fetching.
    mutating func fetched() -> [Frame]? {
        guard case .fetching(let session, let user, let role, let waiting) = state else { return nil }
        state = .joined(session: session, user: user, role: role)
        return waiting
    }

    // MARK: The end

    /// The token that opened the room has expired by `now`: `unauthorized`, and the connection closes
    /// (1008). Nil while it is valid, without a token, or before one was accepted. The hub asks once a
    /// second for every joined connection; a frame asks first thing.
    mutating func expired(now: Int64) -> FrameOutcome? {
        guard let tokenExpires, now >= tokenExpires else { return nil }
        switch state {
        case .opening, .joined, .fetching:
            state = .closed(leaving: session)
            return .expire(.init(seq: nil, ProtocolError(.unauthorized,
                "the access token has expired; connect again with a new token (the session can be resumed)")))
        case .awaitingHello, .authorizing, .closed:
            return nil
        }
    }

    /// The session resumed on another connection: this one stops speaking for it (and is closed, 1000).
    mutating func replaced() {
        state = .closed(leaving: nil)
    }

    /// An admin deleted the room: nothing more is read (the connection is closed, 1000 `room deleted`,
    /// once the answers held for it behind commits written before the deletion have gone). Nothing
    /// leaves: the room is gone.
    mutating func roomDeleted() {
        state = .closed(leaving: nil)
    }

    /// The connection closed: the session it carried leaves the room (nil if it carried none).
    mutating func closed() -> SessionID? {
        defer { state = .closed(leaving: nil) }
        if case .closed(let leaving) = state { return leaving }
        return session
    }

    // MARK: Helpers

    private mutating func refuse(_ error: ProtocolError, seq: Int? = nil) -> FrameOutcome {
        if error.code.isFatal { state = .closed(leaving: session) }
        return .refuse(.init(seq: seq, error), close: error.code.isFatal)
    }

    private mutating func closeAll(_ reason: String) -> FrameOutcome {
        state = .closed(leaving: session)
        return .close(code: 1008, reason: reason)
    }

    /// The requests whose replies the room keeps by seq.
    static let sequenced: Set<String> = ["submit", "undo", "redo", "restore"]

    static func seq(of json: JSON) -> Int? {
        if case .int(let seq)? = json["seq"] { seq } else { nil }
    }
}
