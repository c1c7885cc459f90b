/// The result of rebasing one diff over another.
public enum TransformOutcome: Hashable, Sendable {
    /// The rebased diff (possibly unchanged).
    case diff(Diff)
    /// The diff became a no-op: a later write to the same target wins (SEMANTICS §3 rules 4–6).
    case overwritten(DiffTarget)
}

/// Operational transform of PeopleKeeper diffs (SEMANTICS §3).
///
/// Positions are rebased with the tag order both diffs were made on, because a move's destination
/// is a gap in the list *without* the moved person: where that gap lands after a concurrent insert
/// depends on where the moved person was. Both the hub (which rebuilds the order at a batch's base)
/// and a client (which has its confirmed model) know that order.
///
/// TP1 holds for every pair: with `m` the model both were made on,
/// `m · a · T(b, over: a, bFirst: false) == m · b · T(a, over: b, aFirst: true)`,
/// where diffs on absent tags are no-ops when applied (rule 2).
public enum Transform {
    /// Rebases `incoming` over `applied`; both were made on a model whose tag order is `order`.
    ///
    /// - Parameter incomingFirst: true when the hub ordered `incoming` before `applied` (it then wins
    ///   position ties and loses last-writer-wins ties). The hub rebasing a new batch passes false.
    public static func transform(
        _ incoming: Diff, over applied: Diff, order: [Tag], incomingFirst: Bool = false
    ) -> TransformOutcome {
        let laterWins: (DiffTarget) -> TransformOutcome = { target in
            incomingFirst ? .overwritten(target) : .diff(incoming)
        }
        switch (incoming, applied) {
        case (.move(let t, _), .move(let u, _)) where t == u:
            return laterWins(.position(t))
        case (.insert(let person, _), .remove(let t)) where person.tag == t && incomingFirst:
            // A re-insert (an undo's, never a submit's: a submit inserts only new tags) ordered before a
            // remove of the same person: the remove takes out what it put back, so over the remove the
            // re-insert does nothing. (Ordered after it, it stands: the person comes back.) TP1 needs this.
            return .overwritten(.person(t))
        case (.insert(let person, _), .move(let t, let to)) where person.tag == t && incomingFirst:
            // A re-insert ordered before a move of the same person: the move then takes the person to
            // its gap, so over the move the re-insert lands there (the list here lacks the person).
            return .diff(.insert(person, at: min(max(to, 0), order.count)))
        case (.insert, _) where applied.isPositional, (.move, _) where applied.isPositional:
            return .diff(rebasePosition(incoming, over: applied, order: order, incomingFirst: incomingFirst))
        case (.set(let t, let v), .set(let u, let w)) where t == u && v.field == w.field:
            return laterWins(.field(t, v.field))
        case (.text(let t, _), .set(let u, .name)) where t == u:
            return .overwritten(.field(t, .name))
        case (.text(let t, let mine), .text(let u, let theirs)) where t == u:
            return .diff(.text(t, mine.transformed(over: theirs, selfFirst: incomingFirst)))
        case (.facialHair(let t, let s, _), .facialHair(let u, let r, _)) where t == u && s == r:
            return laterWins(.facialHair(t, s))
        case (.preference(let t, let p, _), .preference(let u, let q, _)) where t == u && p == q:
            return laterWins(.preference(t, p))
        default:
            // Different tags or fields commute; `set(name)` wins over an applied `text`; a diff on a
            // removed tag is kept and becomes a no-op when applied (rule 2), so a restore revives it.
            return .diff(incoming)
        }
    }

    /// Rebases a batch over an applied batch (each a sequence, made on `order`), pairwise on a grid.
    ///
    /// Returns the rebased incoming diffs and the targets of those that became no-ops, each with the
    /// index of the applied diff that overwrote it. Cost O(|incoming| × |applied| × people) worst case.
    public static func transform(
        _ incoming: [Diff], over applied: [Diff], order: [Tag], incomingFirst: Bool = false
    ) -> (diffs: [Diff], overwritten: [(target: DiffTarget, byApplied: Int)]) {
        var diffs = incoming
        var overwritten: [(target: DiffTarget, byApplied: Int)] = []
        var outer = order
        for (appliedIndex, original) in applied.enumerated() {
            var current: Diff? = original
            var inner = outer
            var next: [Diff] = []
            next.reserveCapacity(diffs.count)
            for d in diffs {
                guard let e = current else {
                    next.append(d)
                    continue
                }
                switch transform(d, over: e, order: inner, incomingFirst: incomingFirst) {
                case .diff(let rebased): next.append(rebased)
                case .overwritten(let target): overwritten.append((target, appliedIndex))
                }
                switch transform(e, over: d, order: inner, incomingFirst: !incomingFirst) {
                case .diff(let rebased): current = rebased
                case .overwritten: current = nil
                }
                if d.isPositional { applyOrder(d, to: &inner) }
            }
            diffs = next
            applyOrder(original, to: &outer)
        }
        return (diffs, overwritten)
    }

    /// The tag order after `diff`, with the clamping rules of apply; diffs on absent tags change nothing.
    public static func applyOrder(_ diff: Diff, to order: [Tag]) -> [Tag] {
        var order = order
        applyOrder(diff, to: &order)
        return order
    }

    /// The same, in place (no copy of a uniquely held list).
    public static func applyOrder(_ diff: Diff, to order: inout [Tag]) {
        switch diff {
        case .insert(let person, let at):
            guard !order.contains(person.tag) else { return }
            order.insert(person.tag, at: min(max(at, 0), order.count))
        case .remove(let tag):
            order.removeAll { $0 == tag }
        case .move(let tag, let to):
            guard let from = order.firstIndex(of: tag) else { return }
            order.remove(at: from)
            order.insert(tag, at: min(max(to, 0), order.count))
        default:
            break
        }
    }

    /// The list change of a positional diff on `order`: who leaves, and who enters at which gap of the
    /// list without the leaver.
    struct ListChange {
        var leaving: Tag?
        var entering: (tag: Tag, gap: Int)?

        init(_ diff: Diff, order: [Tag]) {
            switch diff {
            case .insert(let person, let at):
                if !order.contains(person.tag) {
                    entering = (person.tag, min(max(at, 0), order.count))
                } else {
                    // An undo's re-insert of a person put back meanwhile (rebased only in undo, never a
                    // submit's): its gap, like a move's, is in the list without the person.
                    leaving = person.tag
                    entering = (person.tag, min(max(at, 0), order.count - 1))
                }
            case .remove(let tag):
                if order.contains(tag) { leaving = tag }
            case .move(let tag, let to):
                // A gap in the list without the person. A move of a person absent here (removed, and
                // maybe put back later) still has its gap, so it keeps the same people on its left
                // through changes made meanwhile and lands right if the person comes back (§3 rules
                // 2 and 3); applied, it changes nothing while the person is absent.
                leaving = tag
                let without = order.contains(tag) ? order.count - 1 : order.count
                entering = (tag, min(max(to, 0), without))
            default:
                break
            }
        }
    }

    /// Rebases the gap of an insert or move over a positional applied diff.
    ///
    /// The incoming gap is kept after the same people it had on its left; the applied diff's entering
    /// person is left of it when it lands left of that gap, or at the same gap and was ordered first.
    ///
    /// The applied diff changes the list by one person at most (one leaves, one enters, or one moves),
    /// and keeps everyone else in order, so the count is arithmetic on at most three positions in
    /// `order`: O(people) scans, no allocation (a batch of moves over another is |in| × |applied| of
    /// these). `referenceRebasePosition` in the tests is the same rule written out on the lists.
    static func rebasePosition(_ incoming: Diff, over applied: Diff, order: [Tag], incomingFirst: Bool) -> Diff {
        let mine = ListChange(incoming, order: order)
        guard let entering = mine.entering else { return incoming } // moves an absent tag: unchanged
        let theirs = ListChange(applied, order: order)
        let leaving = mine.leaving.flatMap { order.firstIndex(of: $0) }
        /// Where `index` of `order` is in the list without the incoming person.
        func withoutMine(_ index: Int) -> Int { leaving.map { $0 < index ? index - 1 : index } ?? index }
        /// Whether the person at `index` of `order` is among the people left of the incoming gap.
        func leftOfGap(_ index: Int) -> Bool { index != leaving && withoutMine(index) < entering.gap }
        var gap = entering.gap
        // Someone left of the gap who is removed no longer counts.
        if case .remove(let tag) = applied, tag != mine.leaving, let index = order.firstIndex(of: tag), leftOfGap(index) {
            gap -= 1
        }
        var arrival = theirs.entering?.tag
        if arrival == mine.leaving || arrival == entering.tag { arrival = nil }
        guard let arrival else { return Self.placed(incoming, at: gap) }
        let arrivalIndex = order.firstIndex(of: arrival)
        // The arrival is counted where it lands, not where it was.
        if let arrivalIndex, leftOfGap(arrivalIndex) { gap -= 1 }
        // Where the arrival lands in the list after the applied diff (nil: it is not in it), then
        // among the people there without the incoming person.
        var landing: Int?
        var incomingBefore = false
        switch applied {
        case .insert(_, let at) where arrivalIndex == nil:
            let index = min(max(at, 0), order.count)
            landing = index
            if let leaving { incomingBefore = leaving < index }
        case .insert:
            landing = arrivalIndex  // already there: the list does not change
            if let leaving, let arrivalIndex { incomingBefore = leaving < arrivalIndex }
        case .move(_, let to) where arrivalIndex != nil:
            let index = min(max(to, 0), order.count - 1)
            landing = index
            if let leaving, let arrivalIndex { incomingBefore = (arrivalIndex < leaving ? leaving - 1 : leaving) < index }
        default:
            break
        }
        if let landing {
            let arrivalGap = landing - (incomingBefore ? 1 : 0)
            if arrivalGap < gap || (arrivalGap == gap && !incomingFirst) { gap += 1 }
        }
        return Self.placed(incoming, at: gap)
    }

    private static func placed(_ incoming: Diff, at gap: Int) -> Diff {
        switch incoming {
        case .insert(let person, _): .insert(person, at: gap)
        case .move(let tag, _): .move(tag, to: gap)
        default: incoming
        }
    }
}
