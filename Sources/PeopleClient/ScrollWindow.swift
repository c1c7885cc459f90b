/// Which rows of a list a window of `space` lines shows, around a selected row: it scrolls only as far
/// as keeps the selection in sight, with two rows of context on either side where there are any, and
/// otherwise stays where it was (`top`: the row that was first). Rows above the first shown are said to
/// be there on a line of their own, which then takes one of the lines. (The terminal's history view:
/// a history pass found it re-centred at every step and the newest rows hidden without a word.)
public struct ScrollWindow: Equatable, Sendable {
    /// The first row shown.
    public var first: Int
    /// How many rows are shown (the line saying that rows are above, when `first > 0`, is not counted).
    public var visible: Int

    public init(first: Int, visible: Int) {
        self.first = first
        self.visible = visible
    }

    /// - Parameters:
    ///   - rows: how many rows there are.
    ///   - selected: the selected row's index.
    ///   - space: the lines there are for rows (and the line saying rows are above).
    ///   - top: the row that was first before, if it is still there (nil: the first row).
    public init(rows: Int, selected: Int, space: Int, top: Int?) {
        let space = max(1, space)
        let start = top ?? 0
        func first(showing visible: Int) -> Int {
            let context = min(2, (visible - 1) / 2)
            var first = min(start, max(0, rows - visible))
            if selected - context < first { first = selected - context }
            if selected + context >= first + visible { first = selected + context - visible + 1 }
            return max(0, min(first, rows - visible))
        }
        // A window that must scroll gives one line to saying so, and is placed again in what is left.
        let visible = first(showing: space) > 0 ? max(1, space - 1) : space
        self.first = first(showing: visible)
        self.visible = visible
    }
}
