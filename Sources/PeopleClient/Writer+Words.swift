import Foundation
import PeopleCore

extension Writer {
    /// Who wrote it and when, as the screen's details say it: `bob · 2 min ago` (without `ago`, for a
    /// narrow column: `bob · 2 min`). The seed's values were written by nobody: `(seed)`; a revision made
    /// before times were recorded: `bob · rev 5`.
    public func words(now: Date, ago: Bool = true) -> String {
        guard let user else { return Writer.seedWords }
        guard let time else { return "\(user) · rev \(rev)" }
        let when = TimeWords.ago(time, now: now)
        return "\(user) · " + (ago || !when.hasSuffix(" ago") ? when : String(when.dropLast(4)))
    }

    /// Who wrote it, for a column: the user, or `(seed)`.
    public var who: String { user ?? Writer.seedWords }

    /// What a writer of the seed's values is called (nobody wrote them: the room began with them).
    public static let seedWords = "(seed)"
}
