import PeopleClient

/// The key line: hints in the order they are read, each with a rank. `line(width:)` keeps every
/// rank-0 hint (`? help`, `q quit`), then takes rank 1, 2, … hint by hint while the line still fits,
/// so a narrow terminal loses the least needed hints, never the way to the help or out.
struct KeyHints {
    var hints: [(text: String, rank: Int)]

    init(_ hints: [(String, Int)]) {
        self.hints = hints.map { (text: $0.0, rank: $0.1) }
    }

    func line(width: Int) -> String {
        let separator = "  "
        var shown = Set(hints.indices.filter { hints[$0].rank == 0 })
        var length = shown.reduce(0) { $0 + TerminalText.columns(hints[$1].text) } + max(0, shown.count - 1) * separator.count
        for rank in Set(hints.map(\.rank)).sorted() where rank > 0 {
            for i in hints.indices where hints[i].rank == rank {
                let added = TerminalText.columns(hints[i].text) + (shown.isEmpty ? 0 : separator.count)
                guard length + added <= width else { continue }
                shown.insert(i)
                length += added
            }
        }
        return hints.indices.filter(shown.contains).map { hints[$0].text }.joined(separator: separator)
    }
}
