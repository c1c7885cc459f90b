@testable import PeopleHub
import Testing

/// The HTTP API's per-caller buckets (`CallerRates`): a flood of new callers does not give anyone
/// their burst back, and the table forgets only callers whose bucket has refilled.
@Suite("HTTP callers' rates")
struct CallerRatesTests {
    @Test("a flood of new names leaves a throttled caller throttled; refilled callers are forgotten, the table stays small")
    func floodKeepsLimits() {
        var rates = CallerRates(prunesAbove: 4)
        let burst = [rates.take("ann@1", rate: 1, now: 0), rates.take("ann@1", rate: 1, now: 0),
                     rates.take("ann@1", rate: 1, now: 0)]
        #expect(burst == [true, true, false], "a burst of 2 at 1 a second")
        for n in 0..<20 { _ = rates.take("name\(n)@2", rate: 1, now: 0) }
        let afterFlood = rates.take("ann@1", rate: 1, now: 0)
        #expect(!afterFlood, "still over her rate after 20 new names")
        // Two seconds on every bucket has refilled: the next pass keeps only the caller it serves.
        for n in 20..<60 { _ = rates.take("name\(n)@2", rate: 1, now: 2_000 + Int64(n)) }
        #expect(rates.count <= 60 - 20)
        let later = rates.take("ann@1", rate: 1, now: 3_000)
        #expect(later)
    }
}
