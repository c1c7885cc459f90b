import PeopleCore

extension Array where Element == SkipReport {
    /// Each report's sentence (`SkipReport.sentence`), once each, in order: several parts of one change
    /// often give the same sentence.
    public func sentences(people: PeopleModel) -> [String] {
        var sentences: [String] = []
        for report in self {
            let sentence = report.sentence(people: people)
            if !sentences.contains(sentence) { sentences.append(sentence) }
        }
        return sentences
    }
}

extension SkipReport {
    /// The report as a sentence for a person reading a screen, naming people by name where `people`
    /// still has them, fields in words: "your change to Bob's hair color was overwritten by bob".
    public func sentence(people: PeopleModel) -> String {
        let who = people.called(tag)
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
        let by = self.by.map { " by \($0)" } ?? ""
        switch reason {
        case .overwritten: return field == nil && style == nil && topic == nil
            ? "\(who) was already back\(by)" : "your change to \(what) was overwritten\(by)"
        case .targetRemoved: return "\(who) was removed\(by)"
        case .editedByOthers: return "\(who) was edited\(by) since you added them"
        case .invariant: return "your change to \(what) no longer fits (the name would be too long)"
        case .expired: return "your change to \(who) is too old to undo"
        }
    }
}
