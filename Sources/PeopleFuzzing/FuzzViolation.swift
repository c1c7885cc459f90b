/// An invariant the harness found broken: what must hold, and what was seen instead.
///
/// The libFuzzer entry point turns it into a crash (`fatalError`); the corpus tests report it as a
/// test failure, so a committed input that breaks an invariant again fails `swift test` by name.
public struct FuzzViolation: Error, Hashable, Sendable, CustomStringConvertible {
    /// The invariant, named as the harness's doc comments name it ("TP1", "inverse restores", …).
    public let invariant: String
    /// The values involved.
    public let detail: String

    public init(_ invariant: String, _ detail: String) {
        self.invariant = invariant
        self.detail = detail
    }

    public var description: String { "fuzz invariant broken: \(invariant): \(detail)" }
}

/// Throws a violation of `invariant` unless `condition` holds.
func require(
    _ condition: Bool, _ invariant: String, _ detail: @autoclosure () -> String = ""
) throws(FuzzViolation) {
    if !condition { throw FuzzViolation(invariant, detail()) }
}
