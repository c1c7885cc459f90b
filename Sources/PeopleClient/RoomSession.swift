import Foundation
import PeopleCore
import WebSocketTransport

/// Why a client could not do what it was asked.
public enum ClientError: Error, Sendable, CustomStringConvertible {
    /// No connection: refused, timed out, or closed before the hub answered.
    case unreachable(String)
    /// The hub answered with an `error` frame.
    case refused(ProtocolError)
    /// Nothing came back in time on an open connection.
    case timedOut(String)
    /// An admin deleted the room (the hub closed the connection with 1000 `room deleted`, while in the
    /// room or at a hello that named a revision of it).
    case roomDeleted(String)

    public var description: String {
        switch self {
        case .unreachable(let why): "cannot reach the hub: \(why)"
        case .refused(let error): "the hub refused: \(error.code.rawValue): \(error.terminalWords)"
        case .timedOut(let what): "no answer from the hub: \(what)"
        case .roomDeleted(let room): "an admin deleted room \(room)"
        }
    }
}

/// A room joined over one connection: the welcome, the people as the hub has them (kept up to date
/// with what arrives), and requests answered one at a time.
public final class RoomSession: @unchecked Sendable {
    public let connection: HubConnection
    public let welcome: ServerMessage.Welcome
    public let room: String
    /// The hub's people at `revision` (after a catch-up: only if `people` came with the welcome).
    public private(set) var people: PeopleModel
    public private(set) var revision: Int
    public private(set) var history: HistorySummary
    /// The `ops` frames taken so far that were not answers to this session's requests, oldest first.
    public private(set) var revisions: [ServerMessage.Ops] = []
    /// The hub ended the session (`unauthorized` for no request: its token expired).
    public private(set) var ended: ProtocolError?
    /// How far the hub's clock is from this one, once a `settle` has been answered.
    public private(set) var clock = HubClock()
    private var seq = 0

    /// The hub's clock now, as far as the last `settle`'s pong told: the time to measure a revision's
    /// `time` against ("2 min ago").
    public var hubNow: Date { clock.hubDate(local: HubClock.localMilliseconds()) }

    private init(connection: HubConnection, welcome: ServerMessage.Welcome, room: String) {
        self.connection = connection
        self.welcome = welcome
        self.room = room
        self.people = PeopleModel(people: welcome.people ?? [])
        self.revision = welcome.rev
        self.history = welcome.history
    }

    /// Connects to `room` on the hub at `base`, says hello and waits for the welcome, following redirects
    /// to another node, and back to `base` when a node one named cannot be reached: at once, then twice
    /// more a second apart (a node that drains or dies holds its rooms until it has exited; the others
    /// send its clients to it meanwhile): each attempt may take up to `timeout`, and the whole up to
    /// eight attempts and 2 s when nothing answers.
    /// With `since`, the missed revisions are taken too (in `revisions`).
    public static func join(base: String, room: String, user: String, token: String? = nil, client: WebSocketClient,
                            timeout: Double, since: Int? = nil, clientName: String = "peoplekeeper") async throws(ClientError) -> RoomSession {
        let home = HubConnection.roomURL(base: base, room: room)
        var url = home
        let hello = ClientMessage.hello(.init(user: user, token: token, client: clientName, since: since))
        // A node a redirect named that cannot be reached: back to `home` (its node may take the room
        // from a node that died), as the product contract says, up to three times; then the failure
        // names the redirect, whose URL is the owner's `cluster.advertisedURL`.
        var redirectedBy: String?
        var wentBack = 0
        func unreachable(_ text: String) -> ClientError? {
            guard let from = redirectedBy else { return .unreachable(text) }
            if wentBack < 3 {
                wentBack += 1
                (url, redirectedBy) = (home, nil)
                return nil
            }
            return .unreachable("\(text) (where \(from) sent this room: the node that holds it, at its cluster.advertisedURL)")
        }
        var backs = 0
        // Four passes (the first and three returns) of a redirect or two each; more is a loop.
        for _ in 0..<16 {
            // After the first return home, a second before each next one: a draining node lets its
            // rooms go when it exits, about a second after it stopped taking connections.
            if wentBack > backs {
                if backs > 0 { try? await Task.sleep(for: .seconds(1)) }
                backs = wentBack
            }
            let connection: HubConnection
            do { connection = try HubConnection(url: url, client: client, first: hello) } catch {
                if let failure = unreachable("\(error)") { throw failure }
                continue
            }
            switch await connection.next(timeout: timeout) {
            case nil:
                connection.close()
                if let failure = unreachable("\(url) did not answer within \(Self.seconds(timeout))") { throw failure }
            case .closed(1000, CloseReason.roomDeleted, _)?:
                throw .roomDeleted(room)
            case .closed(let code, let reason, let error)?:
                if let failure = unreachable(Self.closedText(url: url, code: code, reason: reason, error: error)) { throw failure }
            case .message(.redirect(let target))?:
                connection.close()
                if let why = HubConnection.unfollowedRedirect(from: url, to: target) { throw .unreachable(why) }
                redirectedBy = url
                url = target
            case .message(.error(let e))?:
                connection.close()
                throw .refused(ProtocolError(e.code, e.message))
            case .message(.welcome(let welcome))?:
                let session = RoomSession(connection: connection, welcome: welcome, room: room)
                if welcome.people == nil {
                    // A catch-up: the revisions after `since` follow, up to the welcome's.
                    while (session.revisions.last?.rev ?? since ?? 0) < welcome.rev {
                        guard try await session.take(timeout: timeout) else {
                            throw .timedOut("the catch-up after revision \(since ?? 0)")
                        }
                    }
                }
                return session
            case .message(let other)?:
                connection.close()
                throw .refused(ProtocolError(.badMessage, "expected a welcome, got \(other.json.text)"))
            }
        }
        throw .unreachable("redirected too many times (last: \(url))")
    }

    /// Sends the request made with the next seq and waits for its answer (`ack`, `undone`, `redone`,
    /// `restored`, or for a question, `log` / `blame`: their seq is not part of the hub's counter, but
    /// numbering them from it keeps every answer this session's own); an `error` for it is thrown. What
    /// else arrives meanwhile is applied.
    public func request(timeout: Double, _ make: (Int) -> ClientMessage) async throws(ClientError) -> ServerMessage {
        seq += 1
        let mine = seq
        connection.send(make(mine))
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let event = await connection.next(timeout: left) else {
                throw .timedOut("request \(mine) was not answered within \(Self.seconds(timeout))")
            }
            switch event {
            case .closed(let code, let reason, let error):
                throw Self.closeError(room: room, url: connection.url, code: code, reason: reason, error: error)
            case .message(let message):
                switch message {
                case .ack(let a) where a.seq == mine:
                    apply(a.ops, rev: a.rev)
                    return message
                case .undone(let r) where r.seq == mine, .redone(let r) where r.seq == mine:
                    if let rev = r.rev { apply(r.ops, rev: rev) }
                    return message
                case .restored(let r) where r.seq == mine:
                    if let rev = r.rev { apply(r.ops, rev: rev) }
                    return message
                case .log(let page) where page.seq == mine:
                    return message
                case .blame(let blame) where blame.seq == mine:
                    return message
                case .error(let e) where e.seq == mine || e.seq == nil:
                    throw .refused(ProtocolError(e.code, e.message))
                default:
                    absorb(message)
                }
            }
        }
    }

    /// Waits until the hub has sent everything it had for this session so far (a `ping`, then frames
    /// up to its `pong`): a `history` that follows an `undone`, for example, is then in `history`.
    public func settle(timeout: Double) async throws(ClientError) {
        seq += 1
        let mine = seq
        connection.send(.ping(seq: mine))
        clock.connectionLost()  // only this ping is waited for: earlier ones' pongs were absorbed
        clock.pingSent(at: HubClock.localMilliseconds())
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let event = await connection.next(timeout: left) else {
                throw .timedOut("ping \(mine) was not answered within \(Self.seconds(timeout))")
            }
            switch event {
            case .closed(let code, let reason, let error):
                throw Self.closeError(room: room, url: connection.url, code: code, reason: reason, error: error)
            case .message(.pong(let seq, let time)) where seq == mine:
                clock.pong(time: time, at: HubClock.localMilliseconds())
                return
            case .message(let message):
                absorb(message)
            }
        }
    }

    /// Takes the next frame (applying it); false after `timeout` without one. Throws when the
    /// connection closes.
    @discardableResult
    public func take(timeout: Double) async throws(ClientError) -> Bool {
        guard let event = await connection.next(timeout: timeout) else { return false }
        switch event {
        case .closed(let code, let reason, let error):
            throw Self.closeError(room: room, url: connection.url, code: code, reason: reason, error: error)
        case .message(let message):
            absorb(message)
            return true
        }
    }

    /// The next revision by anyone (`ops`), waiting as long as it takes; nil if the connection closed
    /// (`ended` says why when the hub did, `lost` how the connection ended).
    public func nextRevision() async -> ServerMessage.Ops? {
        let seen = revisions.count
        while revisions.count == seen {
            do { try await take(timeout: 3600) } catch {
                switch error {
                case .unreachable(let how): lost = how
                case .roomDeleted: deleted = true
                default: break
                }
                return nil
            }
        }
        return revisions.last
    }

    /// How the connection ended, once `nextRevision` found it closed: `ws://…/v1/rooms/r closed the
    /// connection (1001 hub shutting down)`, so a drain and a crash read apart.
    public private(set) var lost: String?
    /// Whether the hub closed the connection because an admin deleted the room (`nextRevision`).
    public private(set) var deleted = false

    public func close() { connection.close() }

    private func absorb(_ message: ServerMessage) {
        switch message {
        case .ops(let o):
            revisions.append(o)
            if o.rev > revision { apply(o.ops, rev: o.rev) }
        case .history(let h):
            history = h
        case .error(let e) where e.seq == nil && e.code == .unauthorized:
            ended = ProtocolError(e.code, e.message)
        default:
            break
        }
    }

    private func apply(_ ops: [Diff], rev: Int) {
        guard rev > revision else { return }
        _ = try? people.apply(batch: ops, absentTags: .skip)
        revision = rev
    }

    /// What a close means to a request: the room deleted, or the hub gone.
    static func closeError(room: String, url: String, code: UInt16?, reason: String?, error: String?) -> ClientError {
        if code == 1000, reason == CloseReason.roomDeleted { return .roomDeleted(room) }
        return .unreachable(closedText(url: url, code: code, reason: reason, error: error))
    }

    static func closedText(url: String, code: UInt16?, reason: String?, error: String?) -> String {
        if let error { return "\(url): \(error)" }
        if let code { return "\(url) closed the connection (\(code)\(reason.map { $0.isEmpty ? "" : " \($0)" } ?? ""))" }
        return "\(url) closed the connection"
    }

    static func seconds(_ value: Double) -> String {
        // Under a second as given (`--timeout 0.001` said "0.0 s").
        value == value.rounded() ? "\(Int(value)) s" : String(format: value < 1 ? "%g s" : "%.1f s", value)
    }
}
