/// The neighbours a person had before a remove or move took it away: what undo places it by.
public struct Neighbours: Hashable, Sendable {
    public var before: Tag?
    public var after: Tag?

    public init(before: Tag?, after: Tag?) {
        self.before = before
        self.after = after
    }
}

/// A diff as applied (resolved index, plain values) with the exact inverse captured at apply time.
///
/// `inverse` applied to the model right after `diff` restores the model right before it, exactly.
/// `neighbours` is set for remove and move: the person's neighbours before the diff.
public struct AppliedDiff: Hashable, Sendable {
    public let diff: Diff
    public let inverse: Diff
    public let neighbours: Neighbours?

    public init(diff: Diff, inverse: Diff, neighbours: Neighbours? = nil) {
        self.diff = diff
        self.inverse = inverse
        self.neighbours = neighbours
    }
}
