/// Why part of an edit, undo or redo was not applied (PROTOCOL.md "skip report").
public struct SkipReport: Hashable, Sendable, CustomStringConvertible {
    public enum Reason: String, Hashable, Sendable, CaseIterable {
        /// Someone (`by`, possibly the user themself) wrote the same field, element or position later.
        case overwritten
        /// The person is absent; `by` removed them.
        case targetRemoved
        /// Undo of an insert under `skip`: another user (`by`) edited the person since.
        case editedByOthers
        /// The rebased part would break the model (a name over the limit).
        case invariant
        /// The hub no longer keeps the history needed to rebase the entry.
        case expired
    }

    public var reason: Reason
    public var tag: Tag
    /// "position" for a move, the field name for a set or text, "facialHair" / "preference" for elements.
    public var field: String?
    public var style: FacialHairStyle?
    public var topic: Topic?
    public var by: String?

    public init(reason: Reason, tag: Tag, field: String? = nil, style: FacialHairStyle? = nil,
                topic: Topic? = nil, by: String? = nil) {
        self.reason = reason
        self.tag = tag
        self.field = field
        self.style = style
        self.topic = topic
        self.by = by
    }

    /// A report about one target of a diff.
    public init(reason: Reason, target: DiffTarget, by: String?) {
        switch target {
        case .person(let tag): self.init(reason: reason, tag: tag, by: by)
        case .position(let tag): self.init(reason: reason, tag: tag, field: "position", by: by)
        case .field(let tag, let field): self.init(reason: reason, tag: tag, field: field.rawValue, by: by)
        case .facialHair(let tag, let style):
            self.init(reason: reason, tag: tag, field: "facialHair", style: style, by: by)
        case .preference(let tag, let topic):
            self.init(reason: reason, tag: tag, field: "preference", topic: topic, by: by)
        }
    }

    public var description: String {
        var parts = ["\(reason.rawValue) tag \(tag)"]
        if let field { parts.append("field \(field)") }
        if let style { parts.append("style \(style.rawValue)") }
        if let topic { parts.append("topic \(topic.rawValue)") }
        if let by { parts.append("by \(by)") }
        return parts.joined(separator: " ")
    }
}
