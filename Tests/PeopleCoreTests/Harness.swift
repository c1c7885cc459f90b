@testable import PeopleCore
import Testing

/// A room with named users, each on one session, driven by message: what a hub does, minus sockets.
struct Harness {
    var room: Room
    var sessions: [String: SessionID] = [:]
    var seqs: [String: Int] = [:]
    var now: Int64 = 0
    /// Every action the room returned, in order.
    var log: [RoomAction] = []

    init(people: [Person] = Fixtures.start, policy: RoomPolicy = RoomPolicy(), users: [String] = ["A", "B"]) {
        room = Room(name: "test", seed: PeopleModel(people: people), policy: policy)
        for user in users { join(user) }
    }

    mutating func join(_ user: String, role: Role = .editor) {
        let (id, actions) = room.join(session: "s-\(user)-\(sessions.count)", user: user, role: role)
        sessions[user] = id
        log += actions
    }

    var people: [Person] { room.model.people.elements }
    var revision: Int { room.revision }

    mutating func nextSeq(_ user: String) -> Int {
        seqs[user, default: 0] += 1
        return seqs[user]!
    }

    /// Sends `message` from `user` and returns the reply addressed to that session with `seq`.
    mutating func send(_ message: ClientMessage, from user: String, at time: Int64? = nil) -> ServerMessage? {
        now = time ?? now + 1000
        let id = sessions[user]!
        let actions = room.receive(message, from: id, now: now)
        log += actions
        #expect(room.model.invariantViolation() == nil)
        for case .send(let reply, let to) in actions where to == [id] {
            switch reply {
            case .ack(let a) where a.seq == message.seq: return reply
            case .undone(let r) where r.seq == message.seq: return reply
            case .redone(let r) where r.seq == message.seq: return reply
            case .error(let e) where e.seq == message.seq: return reply
            case .restored(let r) where r.seq == message.seq: return reply
            default: continue
            }
        }
        return nil
    }

    /// Submits a batch made on `base` (default: the current revision); expects an ack.
    @discardableResult
    mutating func submit(_ user: String, _ ops: [Diff], base: Int? = nil, label: String? = nil,
                         coalesce: String? = nil, at time: Int64? = nil,
                         sourceLocation: SourceLocation = #_sourceLocation) -> ServerMessage.Ack {
        let message = ClientMessage.submit(.init(seq: nextSeq(user), base: base ?? revision, ops: ops,
                                                 label: label, coalesce: coalesce))
        guard case .ack(let ack)? = send(message, from: user, at: time) else {
            Issue.record("expected an ack", sourceLocation: sourceLocation)
            return .init(seq: 0, rev: -1, ops: [])
        }
        return ack
    }

    /// Submits a batch that must be refused; returns the error.
    mutating func reject(_ user: String, _ ops: [Diff], base: Int? = nil,
                         sourceLocation: SourceLocation = #_sourceLocation) -> ServerMessage.ErrorMessage? {
        let message = ClientMessage.submit(.init(seq: nextSeq(user), base: base ?? revision, ops: ops))
        guard case .error(let error)? = send(message, from: user) else {
            Issue.record("expected an error", sourceLocation: sourceLocation)
            return nil
        }
        return error
    }

    @discardableResult
    mutating func undo(_ user: String, scope: PeopleCore.Tag? = nil, at time: Int64? = nil) -> ServerMessage.UndoResult {
        guard case .undone(let r)? = send(.undo(.init(seq: nextSeq(user), scope: scope)), from: user, at: time) else {
            Issue.record("expected undone")
            return .init(seq: 0)
        }
        return r
    }

    @discardableResult
    mutating func redo(_ user: String, scope: PeopleCore.Tag? = nil, at time: Int64? = nil) -> ServerMessage.UndoResult {
        guard case .redone(let r)? = send(.redo(.init(seq: nextSeq(user), scope: scope)), from: user, at: time) else {
            Issue.record("expected redone")
            return .init(seq: 0)
        }
        return r
    }

    func person(_ tag: PeopleCore.Tag) -> Person? { room.model[tag] }
}

enum Fixtures {
    static let p1 = Person(tag: 1, name: "Ann", hairColor: .brown, hairLength: .short, eyeColor: .blue,
                           glasses: false, facialHair: [], likes: [.music], dislikes: [.weather])
    static let p2 = Person(tag: 2, name: "Joan", hairColor: .red, hairLength: .long, eyeColor: .green,
                           glasses: false, facialHair: [], likes: [.books], dislikes: [])
    static let p3 = Person(tag: 3, name: "Sam", hairColor: .black, hairLength: .medium, eyeColor: .brown,
                           glasses: true, facialHair: [.beard], likes: [], dislikes: [.sports])
    static let start = [p1, p2, p3]

    static func person(_ tag: PeopleCore.Tag, _ name: String = "New") -> Person {
        Person(tag: tag, name: name, hairColor: .gray, hairLength: .short, eyeColor: .hazel)
    }

    static func force(cascade: Bool = true) -> RoomPolicy {
        RoomPolicy(undo: UndoPolicy(conflicts: .force, cascade: cascade))
    }
}
