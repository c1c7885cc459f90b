import PeopleClient
import Testing

/// The terminal history view's window over its rows (`ScrollWindow`), without a terminal: the tmux
/// tests see it drawn, these pin the arithmetic at the edges.
@Suite("History view: the window over the rows")
struct ScrollWindowTests {
    @Test("rows that fit are all shown, from the first, wherever the selection is")
    func allFit() {
        for selected in 0..<5 {
            #expect(ScrollWindow(rows: 5, selected: selected, space: 10, top: nil) == ScrollWindow(first: 0, visible: 10))
        }
    }

    @Test("moving down scrolls only at the edge, keeping two rows below the selection; the line saying rows are above takes one")
    func scrollsAtTheEdge() {
        // 10 lines, 100 rows: rows 0–9 shown while the selection is at most 7.
        #expect(ScrollWindow(rows: 100, selected: 7, space: 10, top: nil) == ScrollWindow(first: 0, visible: 10))
        // At 8 the window must move: one line says rows are above, 9 rows show 2…10 (8 has 2 below).
        let moved = ScrollWindow(rows: 100, selected: 8, space: 10, top: nil)
        #expect(moved == ScrollWindow(first: 2, visible: 9))
        // One more step down moves it by one, from where it was.
        #expect(ScrollWindow(rows: 100, selected: 9, space: 10, top: moved.first) == ScrollWindow(first: 3, visible: 9))
    }

    @Test("moving up inside the window does not move it; at its top edge it keeps two rows above")
    func staysThenScrollsUp() {
        #expect(ScrollWindow(rows: 100, selected: 45, space: 10, top: 40) == ScrollWindow(first: 40, visible: 9))
        #expect(ScrollWindow(rows: 100, selected: 41, space: 10, top: 40) == ScrollWindow(first: 39, visible: 9))
        // Back at the newest rows the line saying rows are above goes.
        #expect(ScrollWindow(rows: 100, selected: 1, space: 10, top: 3) == ScrollWindow(first: 0, visible: 10))
    }

    @Test("the last rows end the window; a top past them is brought back")
    func theEnd() {
        #expect(ScrollWindow(rows: 100, selected: 99, space: 10, top: nil) == ScrollWindow(first: 91, visible: 9))
        #expect(ScrollWindow(rows: 12, selected: 11, space: 10, top: 11) == ScrollWindow(first: 3, visible: 9))
    }

    @Test("tiny windows: one or two lines still show the selection")
    func tiny() {
        for space in [-3, 0, 1] {
            let window = ScrollWindow(rows: 50, selected: 20, space: space, top: nil)
            #expect(window.visible == 1 && window.first == 20, "space \(space)")
        }
        let two = ScrollWindow(rows: 50, selected: 20, space: 2, top: nil)
        #expect(two.visible == 1 && two.first == 20)
    }

    @Test("whatever the numbers, the selection is shown and the window is inside the rows (every case up to 60 rows and 19 lines)")
    func alwaysInSight() {
        var wrong: [String] = []
        for rows in 1...60 {
            for space in 0...19 {
                for selected in 0..<rows {
                    for top in [nil] + Array(0..<rows) {
                        let window = ScrollWindow(rows: rows, selected: selected, space: space, top: top)
                        let inSight = window.first >= 0 && window.first <= selected && selected < window.first + window.visible
                        let fits = window.visible + (window.first > 0 ? 1 : 0) <= max(1, space) || window.visible == 1
                        if !(inSight && fits) {
                            wrong.append("rows \(rows) selected \(selected) space \(space) top \(String(describing: top)) → \(window)")
                        }
                    }
                }
            }
        }
        let failing = wrong.count  // (the count, not the list, in the expectation: it could be long)
        #expect(failing == 0, "the first: \(wrong.first ?? "")")
    }
}
