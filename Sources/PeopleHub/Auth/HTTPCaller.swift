import PeopleCore

/// What a token lets its holder do: read (`viewer`), also write (`editor`), also use the HTTP API's
/// admin routes (`admin`). In a room an admin is an editor.
public enum AccessRole: String, Hashable, Sendable, CaseIterable {
    case viewer, editor, admin

    /// The role in a room's session.
    public var roomRole: Role { self == .viewer ? .viewer : .editor }

    func allows(_ need: AccessRole) -> Bool {
        switch need {
        case .viewer: true
        case .editor: self != .viewer
        case .admin: self == .admin
        }
    }
}

/// Who is calling the HTTP API: from a bearer token (`auth.mode: token`), or in open mode the `user`
/// query argument (or body field) as an editor, and an admin only from a loopback peer.
struct HTTPCaller {
    var user: String?
    var role: AccessRole
    /// The rooms a token names (nil: every room, open mode).
    var rooms: [RoomPattern]?
    /// When the token expires (the hub's clock, ms; nil: open mode): a long poll waits no longer.
    var expires: Int64? = nil
    /// Why the caller is not an admin, when the usual "this needs an admin" would puzzle (open mode).
    var notAdmin: String? = nil

    /// Whether the caller may `need` in `room`: a room outside the token's patterns or a role too
    /// small is `forbidden`.
    func check(_ need: AccessRole, room: String) throws {
        if let rooms, !rooms.contains(where: { $0.matches(room) }) {
            throw HTTPFailure.forbidden("the token does not give access to room \(room)")
        }
        guard role.allows(need) else {
            throw HTTPFailure.forbidden(need == .admin ? notAdmin ?? "this needs an admin" : "a viewer cannot change the room")
        }
    }

    /// Whether a room shows in the caller's admin listing.
    func sees(_ room: String) -> Bool { rooms?.contains { $0.matches(room) } ?? true }

    /// Whether the caller's patterns match every room (open mode, or a pattern made of `*` only): the
    /// webhooks' state, whose backlog and errors are of every room an endpoint serves, needs it.
    var seesEveryRoom: Bool { rooms?.contains { !$0.text.isEmpty && $0.text.allSatisfy { $0 == "*" } } ?? true }

    /// The user a write is made as: the token's, or in open mode the query's or the body's `user`. A
    /// body's `user` that names someone else is refused rather than ignored (a script that meant to
    /// write as that user would otherwise write as the caller without knowing).
    func writer(body: JSON?) throws -> String {
        if let user {
            switch body?["user"] {
            case nil, .null?: break
            // Byte for byte (Swift's `==` would let another normalization of the name through).
            case .string(let named)? where named.utf8.elementsEqual(user.utf8): break
            case .string(let named)?:
                throw HTTPFailure.badMessage("the body's user (\(named)) is not the caller (\(user)): leave it out, or call as \(named)")
            case let other?:
                throw HTTPFailure.badMessage("the body's user must be a string (the caller's name), not \(other)")
            }
            return user
        }
        if case .string(let name)? = body?["user"], (try? UserName(name)) != nil { return name }
        throw HTTPFailure.badMessage("say who is writing: a user query argument or body field (open mode)")
    }
}
