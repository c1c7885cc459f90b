import Foundation
import PeopleTestSupport
import Testing

@Suite("Test support: CPU-bound tests")
struct CPUBoundTraitTests {
    @Test("a CPU-bound test runs on the thread kept for them, not on the cooperative pool", .cpuBound)
    func runsOnItsThread() {
        #expect(CPUBoundTrait.isOnItsThread, "ran on \(CPUBoundTrait.currentThreadName)")
    }

    @Test("a parameterized CPU-bound test runs every case there", .cpuBound, arguments: 0..<3)
    func casesRunOnItsThread(index: Int) async {
        #expect(CPUBoundTrait.isOnItsThread, "case \(index) ran on \(CPUBoundTrait.currentThreadName)")
    }

    @Test("a test without the trait does not run there")
    func othersDoNot() async {
        #expect(!CPUBoundTrait.isOnItsThread)
    }
}

@Suite("Test support: blocking work")
struct BlockingTests {
    @Test("blocking work runs off the cooperative pool, each on a thread of its own, and hands back its value")
    func runsOffThePool() async throws {
        // Eight bodies that each wait for all eight to have started: on the pool (one thread per core)
        // they could not all run at once, and every wait would run out.
        let barrier = Barrier(count: 8)
        let met = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<barrier.count {
                group.addTask {
                    try await blocking {
                        barrier.arriveAndWait(seconds: 20) && !Thread.isMainThread && !CPUBoundTrait.isOnItsThread
                    }
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(met == Array(repeating: true, count: barrier.count))
        #expect(try await blocking { 6 * 7 } == 42)
    }

    @Test("an expectation failing in blocking work is the calling test's")
    func expectationsBelongToTheTest() async throws {
        // On a bare thread the issue had no test: withKnownIssue did not see it (and said so), and it
        // went to whatever issue scope was open elsewhere in the run.
        try await withKnownIssue {
            try await blocking { #expect(Bool(false), "recorded in blocking work") }
        }
    }

    @Test("an error thrown in blocking work reaches the caller")
    func errorsReachTheCaller() async {
        struct Refused: Error {}
        await #expect(throws: Refused.self) { try await blocking { throw Refused() } }
    }
}

/// Lets `count` threads through once all of them have arrived (or each after `seconds`: then false).
private final class Barrier: @unchecked Sendable {
    let count: Int
    private let condition = NSCondition()
    private var arrived = 0

    init(count: Int) { self.count = count }

    func arriveAndWait(seconds: Double) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        arrived += 1
        condition.broadcast()
        let deadline = Date(timeIntervalSinceNow: seconds)
        while arrived < count { if !condition.wait(until: deadline) { return false } }
        return true
    }
}
