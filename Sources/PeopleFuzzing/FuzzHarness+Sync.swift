import PeopleCore

extension FuzzHarness {
    /// Reads `bytes` as a schedule for two or three clients (`ClientSync`; the third is user A on a
    /// second device) and a room: local edits (valid on the client's view), undos and redos, frames
    /// delivered one at a time in each direction, drops and reconnects (with `resume` and `since`),
    /// time passing (coalescing), up to 64 steps. `RoomProbe` checks the room after every frame; the
    /// clients' models keep their invariants; a client is refused only by the name limit. At the end
    /// everyone reconnects and the network settles: every client's view and confirmed state are the
    /// room's model at the room's revision, with nothing pending, and the room rebuilt from its journal
    /// equals the room that ran.
    public static func sync(_ bytes: [UInt8]) throws(FuzzViolation) {
        var input = FuzzBytes(bytes)
        let start = FuzzEdits.model(&input)
        let policy = RoomPolicy(undo: UndoPolicy(depth: input.pick([100, 0, 2]), conflicts: input.bool() ? .force : .skip,
                                                 cascade: input.byte() % 4 != 3))
        var network = SyncNetwork(start: start, policy: policy, users: input.bool() ? ["A", "B", "A"] : ["A", "B"])
        do {
            for i in network.peers.indices { try network.connect(i) }
            var steps = 0
            while !input.isAtEnd && steps < 64 {
                steps += 1
                let i = input.int(0...(network.peers.count - 1))
                switch input.int(0...15) {
                case 0, 1, 2: try network.edit(i, &input)
                case 3:
                    let scope = input.int(0...3) == 0 ? input.pick(network.probe.room.model.tags + [1]) : nil
                    network.revert(i, redo: false, scope: scope)
                case 4: network.revert(i, redo: true, scope: nil)
                case 5, 6, 7, 8: try network.deliverUp(i)
                case 9, 10, 11, 12: try network.deliverDown(i)
                case 13: try network.disconnect(i)
                case 14: try network.connect(i)
                default: network.probe.now += Int64(input.pick([100, 400, 1000]))
                }
            }
            try network.settle()
            try network.probe.checkRestore()
        } catch {
            let trace = "start: \(start.text)\n" + network.log.joined(separator: "\n")
            throw FuzzViolation(error.invariant, error.detail + "\n" + trace)
        }
    }
}
