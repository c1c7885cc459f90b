import PeopleCore

extension Array where Element == SkipReport {
    /// Each report's sentence (`SkipReport.sentence`), once each, in order: several parts of one change
    /// often give the same sentence.
    public func sentences(people: PeopleModel, known: [Tag: String] = [:], me: String? = nil, redo: Bool = false) -> [String] {
        var sentences: [String] = []
        for report in self {
            let sentence = report.sentence(people: people, known: known, me: me, redo: redo)
            if !sentences.contains(sentence) { sentences.append(sentence) }
        }
        return sentences
    }
}

extension SkipReport {
    /// The report as a sentence for a person reading a screen, naming people by name where `people`
    /// still has them (else by the name `known` remembers, else by tag), fields in words: "your change
    /// to Bob's hair color was overwritten by bob". `me`: the reader, whose own later change (a
    /// selective undo is guarded by those too) reads "you changed Bob's hair color again since".
    /// `redo`: the report answers a redo, whose person to delete was brought back by the user's undo
    /// ("since your undo brought them back", not "since you added them": a black-box pass, session 43).
    public func sentence(people: PeopleModel, known: [Tag: String] = [:], me: String? = nil, redo: Bool = false) -> String {
        let who = people[tag].flatMap { $0.name.isEmpty ? nil : $0.name } ?? known[tag] ?? "tag \(tag)"
        let what: String
        if let style {
            what = "\(who)'s facial hair (\(style.rawValue))"
        } else if let topic {
            what = "\(who)'s opinion on \(topic.rawValue)"
        } else if let field {
            what = "\(who)'s \(fieldWords(field))"
        } else {
            what = who
        }
        let mine = self.by != nil && self.by == me
        let by = self.by.map { " by \($0)" } ?? ""
        switch reason {
        case .overwritten:
            if field == nil && style == nil && topic == nil {
                return "\(who) was already back" + (mine ? " (you put them back)" : self.by.map { " (\($0) put them back)" } ?? "")
            }
            return mine ? "you changed \(what) again since" : "your change to \(what) was overwritten\(by)"
        case .targetRemoved: return mine ? "you deleted \(who) since" : "\(who) was removed\(by)"
        case .editedByOthers:
            if redo { return mine ? "you edited \(who) since bringing them back" : "\(who) was edited\(by) since your undo brought them back" }
            return mine ? "you edited \(who) since adding them" : "\(who) was edited\(by) since you added them"
        case .invariant: return "your change to \(what) no longer fits (the name would be too long)"
        case .expired: return "your change to \(who) is too old to undo"
        }
    }
}
