#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PeopleFuzzing
import Testing
import PeopleTestSupport

/// Replays every committed fuzz input through the harness in-process: the corpus libFuzzer grew
/// (`Tests/Fuzz/corpus/MODE/`) and the inputs that once broke something (`Tests/Fuzz/regressions/MODE/`,
/// each described in `Tests/Fuzz/regressions/README.md`). A crash found by `make fuzz` becomes a
/// regression test by saving its input there.
@Suite("Fuzz corpus replay", .cpuBound)
struct CorpusReplayTests {
    static let fuzzDirectory: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(2)  // …/Tests/PeopleFuzzingTests/CorpusReplayTests.swift → …/Tests
        return parts.joined(separator: "/") + "/Fuzz"
    }()

    static func replay(_ mode: FuzzMode, _ kind: String) -> Int {
        let inputs = FuzzInputs.files(at: "\(fuzzDirectory)/\(kind)/\(mode.rawValue)")
        for path in inputs {
            guard let bytes = FuzzInputs.read(path) else { Issue.record("cannot read \(path)"); continue }
            do { try FuzzHarness.run(mode, bytes) } catch {
                Issue.record("\(path): \(error)")
            }
        }
        return inputs.count
    }

    @Test("every committed corpus input keeps every invariant", arguments: FuzzMode.allCases)
    func corpus(mode: FuzzMode) {
        #expect(Self.replay(mode, "corpus") > 0, "no corpus for \(mode.rawValue) under \(Self.fuzzDirectory)/corpus")
    }

    @Test("every input that once broke an invariant or crashed keeps every invariant now", arguments: FuzzMode.allCases)
    func regressions(mode: FuzzMode) {
        _ = Self.replay(mode, "regressions")
    }

    @Test("the empty input is a valid program in every mode")
    func emptyInput() throws {
        for mode in FuzzMode.allCases { try FuzzHarness.run(mode, []) }
    }
}
