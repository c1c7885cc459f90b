/// What to do with a diff whose tag is absent when it is applied.
public enum AbsentTagPolicy: Sendable {
    /// The batch is invalid (a client's own edit on its own state).
    case reject
    /// The diff is a no-op, returned in `BatchResult.absent` (SEMANTICS §3 rule 2).
    case skip
}

/// The outcome of applying a batch.
public struct BatchResult: Hashable, Sendable {
    /// The diffs that changed something, as applied, in order.
    public var applied: [AppliedDiff] = []
    /// Diffs skipped because their tag was absent (only with `AbsentTagPolicy.skip`), with their index in the batch.
    public var absent: [(index: Int, diff: Diff)] = []

    public static func == (lhs: BatchResult, rhs: BatchResult) -> Bool {
        lhs.applied == rhs.applied && lhs.absent.map(\.index) == rhs.absent.map(\.index)
            && lhs.absent.map(\.diff) == rhs.absent.map(\.diff)
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(applied) }
}

extension PeopleModel {
    /// Applies a batch atomically: every diff in order, each on the state the previous one left.
    ///
    /// Either all of it applies, or it throws `InvalidOp` and the model is unchanged (the diffs already
    /// applied are rolled back with their exact inverses). Diffs that change nothing are left out of
    /// `applied`. Cost: O(diffs × people) at worst (index lookups on positional diffs).
    @discardableResult
    public mutating func apply(batch: [Diff], absentTags: AbsentTagPolicy = .reject) throws(InvalidOp) -> BatchResult {
        var result = BatchResult()
        for (index, diff) in batch.enumerated() {
            do {
                if absentTags == .skip, !diff.isInsert, !contains(diff.tag) {
                    result.absent.append((index, diff))
                    continue
                }
                if let applied = try apply(diff) { result.applied.append(applied) }
            } catch {
                rollBack(result.applied)
                throw error
            }
        }
        return result
    }

    /// Undoes applied diffs, newest first, with their exact inverses.
    public mutating func rollBack(_ applied: [AppliedDiff]) {
        for done in applied.reversed() {
            do { _ = try apply(done.inverse) } catch {
                preconditionFailure("exact inverse failed to apply: \(error)")
            }
        }
    }

    /// Applies one diff. Returns nil when it changes nothing; throws when it is invalid (model unchanged).
    @discardableResult
    public mutating func apply(_ diff: Diff) throws(InvalidOp) -> AppliedDiff? {
        switch diff {
        case .insert(let person, let at):
            guard person.tag > 0 else { throw InvalidOp("tag \(person.tag) is not positive") }
            guard !contains(person.tag) else { throw InvalidOp("tag \(person.tag) is already present") }
            guard NameLimit.allows(person.name) else { throw InvalidOp(Self.nameTooLong) }
            let index = min(max(at, 0), count)
            people.insert(person, at: index)
            return AppliedDiff(diff: .insert(person, at: index), inverse: .remove(person.tag))

        case .remove(let tag):
            let index = try presentIndex(tag)
            let neighbours = neighbours(ofIndex: index)
            let person = people.remove(at: index)
            return AppliedDiff(diff: .remove(tag), inverse: .insert(person, at: index), neighbours: neighbours)

        case .move(let tag, let to):
            let from = try presentIndex(tag)
            let index = min(max(to, 0), count - 1)
            guard index != from else { return nil }
            let neighbours = neighbours(ofIndex: from)
            let person = people.remove(at: from)
            people.insert(person, at: index)
            return AppliedDiff(diff: .move(tag, to: index), inverse: .move(tag, to: from), neighbours: neighbours)

        case .set(let tag, let value):
            let index = try presentIndex(tag)
            if case .name(let name) = value, !NameLimit.allows(name) { throw InvalidOp(Self.nameTooLong) }
            let old = people[index].value(of: value.field)
            guard old != value else { return nil }
            people[index].assign(value)
            return AppliedDiff(diff: diff, inverse: .set(tag, old))

        case .facialHair(let tag, let style, let present):
            let index = try presentIndex(tag)
            guard people[index].facialHair.contains(style) != present else { return nil }
            if present { people[index].facialHair.insert(style) } else { people[index].facialHair.remove(style) }
            return AppliedDiff(diff: diff, inverse: .facialHair(tag, style, present: !present))

        case .preference(let tag, let topic, let opinion):
            let index = try presentIndex(tag)
            let old = people[index].opinion(on: topic)
            guard old != opinion else { return nil }
            people[index].setOpinion(opinion, on: topic)
            return AppliedDiff(diff: diff, inverse: .preference(tag, topic, old))

        case .text(let tag, let operation):
            let index = try presentIndex(tag)
            let old = people[index].name
            guard let new = operation.apply(to: old) else {
                throw InvalidOp("text span \(operation.span) is past the end of the name of \(tag)")
            }
            guard NameLimit.allows(new) else { throw InvalidOp(Self.nameTooLong) }
            guard !new.sameScalars(as: old) else { return nil }
            people[index].name = new
            return AppliedDiff(diff: diff, inverse: .text(tag, operation.inverse(on: old)))
        }
    }

    static let nameTooLong = "name is over \(NameLimit.maxUTF8Bytes) UTF-8 bytes"

    private func presentIndex(_ tag: Tag) throws(InvalidOp) -> Int {
        guard let index = index(of: tag) else { throw InvalidOp("tag \(tag) is not present") }
        return index
    }

    /// The neighbours of the person at `index`.
    public func neighbours(ofIndex index: Int) -> Neighbours {
        Neighbours(
            before: index > 0 ? people[index - 1].tag : nil,
            after: index + 1 < count ? people[index + 1].tag : nil
        )
    }
}
