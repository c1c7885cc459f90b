import Foundation
import PeopleCore

extension Writer {
    /// Who wrote it and when, as the screen's details say it: `bob · 2 min ago`. The seed's values
    /// were written by nobody: `(seed)`; a revision made before times were recorded: `bob · rev 5`.
    public func words(now: Date) -> String {
        guard let user else { return Writer.seedWords }
        return "\(user) · " + (time.map { TimeWords.ago($0, now: now) } ?? "rev \(rev)")
    }

    /// Who wrote it, for a column: the user, or `(seed)`.
    public var who: String { user ?? Writer.seedWords }

    /// What a writer of the seed's values is called (nobody wrote them: the room began with them).
    public static let seedWords = "(seed)"
}
