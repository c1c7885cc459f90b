
/// Percentiles of a list of durations (in whatever unit they were given).
struct Percentiles {
    var p50 = 0.0, p99 = 0.0, max = 0.0, count = 0

    init(_ values: [Double]) {
        guard !values.isEmpty else { return }
        let sorted = values.sorted()
        func at(_ q: Double) -> Double { sorted[Swift.min(sorted.count - 1, Int(Double(sorted.count) * q))] }
        p50 = at(0.5)
        p99 = at(0.99)
        max = sorted.last!
        count = sorted.count
    }
}
