import PeopleCore

extension FuzzHarness {
    /// Reads `bytes` as a program of concurrent edits and checks the core's algebra and the room's
    /// handling of it.
    ///
    /// The bytes make a model of 1…5 people, a room policy (skip or force, cascade, depth, kept
    /// revisions, max people), and two batches `a` (user A) and `b` (user B), each valid on the model
    /// and made from the same base. Checked on them:
    /// - apply: each batch applies, keeps the invariants, its tag order is `Transform.applyOrder`'s,
    ///   and its exact inverses give the model back; a batch of unchecked diffs either applies (and
    ///   rolls back exactly) or is refused leaving the model untouched;
    /// - TP1: `m·a·T(b, a) == m·b·T(a, b)` whenever both sides apply (a side can be refused only by
    ///   the name limit);
    /// - the room: A submits `a`, B submits `b`, both at base 0; the room's model is the one the
    ///   transform predicts, from the tag order of each revision seen here (not the room's rebuilt one).
    /// Then up to 16 steps chosen by the bytes: more submits at any base since the user's last ack
    /// (checked the same way; some with unchecked diffs), undo and redo (with or without scope), a
    /// resent request (the same reply, no change), a reconnect with `resume` and `since` (the catch-up
    /// replays to the model), and "undo everything, then redo everything" (the identity, when the
    /// policy keeps all history and deep enough stacks). `RoomProbe` checks every action, and at the
    /// end the room rebuilt from its journal equals the room that ran.
    public static func applyTransform(_ bytes: [UInt8]) throws(FuzzViolation) {
        var input = FuzzBytes(bytes)
        let start = FuzzEdits.model(&input)
        let policy = RoomPolicy(
            undo: UndoPolicy(depth: input.pick([0, 100, 1, 2]), conflicts: input.bool() ? .force : .skip,
                             cascade: input.byte() % 4 != 3),
            keptRevisions: input.pick([0, 0, 3, 6]), maxPeople: input.pick([0, 0, 0, start.count + 2]))
        var program = EditProgram(start: start, policy: policy)
        do {
            try run(&program, &input, start: start)
        } catch {
            throw FuzzViolation(error.invariant, error.detail + "\n" + program.trace)
        }
    }

    private static func run(
        _ program: inout EditProgram, _ input: inout FuzzBytes, start: PeopleModel
    ) throws(FuzzViolation) {
        try program.joinBoth()

        var scratchTag = 90_000
        let a = FuzzEdits.batch(on: start, nextTag: &program.nextTag[0], validOnly: true, &input)
        let b = FuzzEdits.batch(on: start, nextTag: &program.nextTag[1], validOnly: true, &input)
        let raw = FuzzEdits.batch(on: start, nextTag: &scratchTag, validOnly: false, &input)
        try checkApply(a, on: start)
        try checkApply(b, on: start)
        try checkUnchecked(raw, on: start)
        try checkTP1(a, b, on: start)

        try program.submit(user: 0, a, base: 0, validAtBase: true)
        try program.submit(user: 1, b, base: 0, validAtBase: true)

        var steps = 0
        while !input.isAtEnd && steps < 16 {
            steps += 1
            let user = input.int(0...1)
            let step = input.int(0...8)
            switch step {
            case 0, 1, 2, 3:
                let base = program.lastAck[user] + input.int(0...(program.head - program.lastAck[user]))
                let unchecked = input.int(0...3) == 3
                program.probe.now += Int64(input.pick([0, 0, 1000]))
                let model = program.probe.models[base] ?? start
                let batch = FuzzEdits.batch(on: model, nextTag: &program.nextTag[user], validOnly: !unchecked, &input)
                try program.submit(user: user, batch, base: base, validAtBase: !unchecked,
                                   label: input.pick([nil, "Edit", ""]), coalesce: input.pick([nil, "k", "k", "j"]))
            case 4, 5:
                let scope = input.int(0...3) == 0 ? input.pick(program.knownTags) : nil
                try program.revert(user: user, redo: step == 5, scope: scope)
            case 6:
                try program.resend(user: user)
            case 7:
                try program.reconnect(user: user, since: input.int(0...program.head))
            default:
                try program.undoAllRedoAll(user: user)
            }
        }
        try program.probe.checkRestore()
    }

    /// A batch valid on `model`: it applies, keeps the invariants, moves tags as `applyOrder` says,
    /// and its inverses restore `model`.
    static func checkApply(_ batch: [Diff], on model: PeopleModel) throws(FuzzViolation) {
        var after = model
        let result: BatchResult
        do { result = try after.apply(batch: batch) } catch {
            throw FuzzViolation("a batch made valid applies", "\(batch) on \(model): \(error)")
        }
        if let violation = after.invariantViolation() { throw FuzzViolation("model invariants", "\(violation)") }
        let order = batch.reduce(model.tags) { Transform.applyOrder($1, to: $0) }
        try require(order == after.tags, "applyOrder follows apply", "\(batch): \(order) vs \(after.tags)")
        var back = after
        back.rollBack(result.applied)
        try require(back == model, "apply then the exact inverses is the identity", "\(batch): \(back) vs \(model)")
        // Each applied diff's inverse, one by one, newest first, also applies (what undo relies on).
        var stepwise = after
        for done in result.applied.reversed() {
            do { try stepwise.apply(done.inverse) } catch {
                throw FuzzViolation("an exact inverse applies", "\(done): \(error)")
            }
        }
        try require(stepwise == model, "inverses one by one restore the model")
    }

    /// A batch of unchecked diffs is atomic: applied whole (and rolled back exactly) or refused whole.
    static func checkUnchecked(_ batch: [Diff], on model: PeopleModel) throws(FuzzViolation) {
        for policy in [AbsentTagPolicy.reject, .skip] {
            var m = model
            let result: BatchResult
            do { result = try m.apply(batch: batch, absentTags: policy) } catch {
                try require(m == model, "a refused batch changes nothing", "\(batch): \(m) vs \(model)")
                continue
            }
            if let violation = m.invariantViolation() { throw FuzzViolation("model invariants", "\(violation)") }
            m.rollBack(result.applied)
            try require(m == model, "apply then the exact inverses is the identity", "\(batch)")
        }
    }

    /// TP1 on two batches made on `model`: both orders converge when both apply.
    static func checkTP1(_ a: [Diff], _ b: [Diff], on model: PeopleModel) throws(FuzzViolation) {
        let order = model.tags
        var left = model
        var right = model
        do {
            try left.apply(batch: a)
            try left.apply(batch: Transform.transform(b, over: a, order: order).diffs, absentTags: .skip)
            try right.apply(batch: b)
            try right.apply(batch: Transform.transform(a, over: b, order: order, incomingFirst: true).diffs,
                            absentTags: .skip)
        } catch {
            // Only the name limit may refuse a rebased batch (concurrent typing into one name); the hub
            // refuses it, and there is nothing to compare.
            try require(error.reason.hasPrefix("name is over"), "a rebased batch applies but for the name limit",
                        "a=\(a) b=\(b) on \(model.text): \(error)")
            return
        }
        try require(left == right, "TP1", "a=\(a) b=\(b) on \(model): \(left.people.elements) vs \(right.people.elements)")
    }
}
