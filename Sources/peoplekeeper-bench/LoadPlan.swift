
/// Who does what in a run.
struct LoadPlan {
    var target: LoadCommand.Target
    var clients: Int
    var rooms: Int
    var writers: Int
    var verifiers: Int
    var mix: (edit: Int, undo: Int, redo: Int)
    var seed: UInt64
}
