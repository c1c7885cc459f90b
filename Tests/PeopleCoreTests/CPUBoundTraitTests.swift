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
