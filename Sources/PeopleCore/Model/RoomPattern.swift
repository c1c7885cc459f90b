/// A pattern of room names, as tokens' `rooms` and webhooks' `rooms` give them: `*` any run of
/// characters, `?` any one, the rest literal (`team-*` matches `team-a` and `team-`).
public struct RoomPattern: Hashable, Sendable {
    public let text: String

    public init(_ text: String) { self.text = text }

    /// What every name it matches starts with: the text before its first `*` or `?`.
    public var literalPrefix: String { String(text.prefix { $0 != "*" && $0 != "?" }) }

    public func matches(_ room: String) -> Bool {
        let p = Array(text), r = Array(room)
        var pi = 0, ri = 0, star: Int?, mark = 0
        while ri < r.count {
            if pi < p.count, p[pi] == "?" || p[pi] == r[ri] {
                pi += 1
                ri += 1
            } else if pi < p.count, p[pi] == "*" {
                star = pi
                mark = ri
                pi += 1
            } else if let s = star {
                pi = s + 1
                mark += 1
                ri = mark
            } else {
                return false
            }
        }
        while pi < p.count, p[pi] == "*" { pi += 1 }
        return pi == p.count
    }
}
