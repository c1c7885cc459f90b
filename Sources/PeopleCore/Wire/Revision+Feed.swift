/// A revision as the HTTP change feed and the webhooks carry it (the product contract's HTTP API):
/// `{"rev","time"?,"author","kind","label"?,"ops"}`, the `ops` broadcast without its `type` (and
/// without the `seq` only a catch-up to the revision's own session carries).
extension Revision {
    public var feedMembers: [JSON.Member] {
        var members: [JSON.Member] = [.init("rev", .int(number)), .init("time", .int(Int(timestamp))),
                                      .init("author", .string(author)), .init("kind", .string(kind.rawValue))]
        if let label { members.append(.init("label", .string(label))) }
        members.append(.init("ops", .array(diffs.map(\.json))))
        return members
    }

    public var feedJSON: JSON { .object(feedMembers) }
}
