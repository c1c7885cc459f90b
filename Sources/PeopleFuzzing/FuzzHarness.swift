/// What a fuzz input is read as: hub frames, a program of concurrent edits, or a network schedule.
public enum FuzzMode: String, CaseIterable, Sendable {
    /// `FuzzHarness.decode`: the bytes are wire frames (one per line).
    case decode
    /// `FuzzHarness.applyTransform`: the bytes are decisions that build a model and concurrent batches.
    case apply
    /// `FuzzHarness.sync`: the bytes schedule client state machines, a room and the network between.
    case sync
}

/// The fuzz targets of PeopleCore (issue 7): deterministic functions of their input bytes that throw a
/// `FuzzViolation` when an invariant of the core breaks. A trap inside the core (index out of range,
/// overflow, a failed precondition) is a crash as it stands.
///
/// Who calls it: the `peoplekeeper-fuzz` executable (libFuzzer's `LLVMFuzzerTestOneInput` when built
/// with `-DPK_FUZZ`, a file replayer otherwise) and `PeopleFuzzingTests`, which replays the committed
/// corpus and regressions in-process.
public enum FuzzHarness {
    /// Runs one input in `mode`.
    public static func run(_ mode: FuzzMode, _ bytes: [UInt8]) throws(FuzzViolation) {
        switch mode {
        case .decode: try decode(bytes)
        case .apply: try applyTransform(bytes)
        case .sync: try sync(bytes)
        }
    }

    /// Largest input either target reads; libFuzzer is run with the same `-max_len`.
    public static let maxInputBytes = 4096
}
