
/// What a run measured and found: requests, revisions, deliveries, latencies and the problems seen.
struct LoadReport {
    var requests = 0
    var dropped = 0
    var revisions = 0
    var deliveries = 0
    var latency = Percentiles([])
    var connect = Percentiles([])
    /// Request to its answer at the writer (edit, undo, redo): what the hub's work adds shows here.
    var answers = [Percentiles([]), Percentiles([]), Percentiles([])]
    var problems: [String] = []
    var converged = true
    var compared = 0
}
