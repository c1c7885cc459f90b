import Crypto
import PeopleCore

/// What one delivery POSTs (HTTP.md §3): the JSON body, its id, and the signature header.
///
/// The body of an item is the same on every attempt, and so is its `id` (unique per endpoint and
/// event; it repeats only on a retry, so receivers can drop duplicates): a revision's id is
/// `ROOM:REV:TIME`, a room event's `ROOM:EVENT:TIME`. The time is in both so a room deleted and
/// created again under the same name gets new ids. An imported revision keeps its exported time, so
/// its id also says when the import made it, `ROOM:REV:TIME:import:AT`: importing one export again
/// (after a deletion, or on another hub with the same receiver) makes new ids, not retries.
struct WebhookPayload: Sendable {
    let id: String
    let body: [UInt8]
    /// When the revision was made or the event happened (for the lag metric).
    let time: Int64

    init(room: String, item: LaneItem) {
        switch item {
        case .revision(let revision):
            self.init(room: room, revision: revision)
        case .notice(let notice):
            // A deleted room's revision kept for the endpoint goes as it would have: same body, same id.
            if let revision = notice.revision { self.init(room: room, revision: revision) } else { self.init(room: room, event: notice) }
        }
    }

    private init(room: String, revision: Revision) {
        id = "\(room):\(revision.number):\(revision.timestamp)" + (revision.importedAt.map { ":import:\($0)" } ?? "")
        time = revision.timestamp
        body = JSON.object([.init("id", .string(id)), .init("event", .string(WebhookEvent.revision.rawValue)),
                            .init("room", .string(room))] + revision.feedMembers).bytes
    }

    private init(room: String, event notice: RoomNotice) {
        id = "\(room):\(notice.event.rawValue):\(notice.time)"
        time = notice.time
        body = JSON.object([.init("id", .string(id)), .init("event", .string(notice.event.rawValue)),
                            .init("room", .string(room)), .init("time", .int(Int(notice.time)))]).bytes
    }

    /// The `PeopleKeeper-Signature` header's value for a POST at `unixSeconds`:
    /// `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
    func signature(secret: [UInt8], unixSeconds: Int64) -> String {
        Self.signature(body: body, secret: secret, unixSeconds: unixSeconds)
    }

    static func signature(body: [UInt8], secret: [UInt8], unixSeconds: Int64) -> String {
        let t = String(unixSeconds)
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: secret))
        hmac.update(data: Array(t.utf8) + [UInt8(ascii: ".")] + body)
        let hex = hmac.finalize().map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
        }.joined()
        return "t=\(t),v1=\(hex)"
    }
}
