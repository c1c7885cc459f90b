import PeopleClient
import Testing

/// Finding a person in the terminal client (`/`): the web page's cases (Tests/js/page-find.test.mjs).
@Suite("Search fold")
struct SearchFoldTests {
    private func finds(_ search: String, _ name: String) -> Bool {
        SearchFold.folded(name).contains(SearchFold.folded(search))
    }

    @Test("case and accents are ignored, composed or not")
    func accents() {
        #expect(finds("jose", "José"))
        #expect(finds("jose", "Jose\u{301}"))
        #expect(finds("JOSÉ", "jose"))
        #expect(finds("nguyen thi", "Nguyễn Thị Minh"))
    }

    @Test("letters that carry their mark inside them")
    func letters() {
        for (search, name) in [("oyvind", "Øyvind"), ("lukasz", "ŁUKASZ"), ("strasse", "Straße"), ("aesa", "Æsa"),
                               ("thor", "Þór"), ("dorde", "Đorđe"), ("boeuf", "Bœuf"), ("øyvind", "OYVIND")] {
            #expect(finds(search, name), "\(search) finds \(name)")
        }
    }

    @Test("what is not in the name is not found")
    func misses() {
        #expect(!finds("oyv", "Olav"))
        #expect(!finds("李", "山田 太郎"))
        #expect(finds("李", "李小龙"))
    }
}
