/// A character-wise edit of a name: retain / insert / delete, counted in Unicode scalar values.
///
/// What the components do not reach is retained. Stored in canonical form: no empty components,
/// adjacent components of one kind merged, no trailing retain; so two operations with the same effect
/// compare equal (inserted text by Unicode scalars, never by canonical equivalence). An operation may
/// be empty, or only retain: it is valid and changes nothing (SEMANTICS §7 reading 6).
public struct TextOperation: Hashable, Sendable {
    public enum Component: Hashable, Sendable {
        case retain(Int)
        case insert(String)
        case delete(Int)

        public static func == (a: Component, b: Component) -> Bool {
            switch (a, b) {
            case (.retain(let x), .retain(let y)), (.delete(let x), .delete(let y)): x == y
            case (.insert(let x), .insert(let y)): x.sameScalars(as: y)
            default: false
            }
        }

        public func hash(into hasher: inout Hasher) {
            switch self {
            case .retain(let n): hasher.combine(0); hasher.combine(n)
            case .insert(let s): hasher.combine(1); s.hashScalars(into: &hasher)
            case .delete(let n): hasher.combine(2); hasher.combine(n)
            }
        }
    }

    public private(set) var components: [Component]

    /// Builds the canonical form of `components`. Counts must be ≥ 1 and inserts non-empty; use
    /// `validated(_:)` for untrusted input.
    public init(_ components: [Component]) {
        self.components = []
        for component in components { append(component) }
        if case .retain = self.components.last { self.components.removeLast() }
    }

    /// An operation from untrusted input, or the reason it is not one.
    public static func validated(_ components: [Component]) -> Result<TextOperation, InvalidOp> {
        var span = 0
        for component in components {
            switch component {
            case .retain(let n), .delete(let n):
                if n < 1 { return .failure(InvalidOp("text counts must be at least 1")) }
                // No name has more scalars than this: a longer reach is past the end of any name (and a
                // sum of hostile counts must not overflow). Not the byte limit: a name may have more
                // scalars than its NFC form has bytes.
                guard n <= NameLimit.maxScalars - span else {
                    return .failure(InvalidOp("text edits reach past the end of any name (at most \(NameLimit.maxScalars) characters)"))
                }
                span += n
            case .insert(let s):
                if s.isEmpty { return .failure(InvalidOp("text insert must not be empty")) }
            }
        }
        return .success(TextOperation(components))
    }

    private mutating func append(_ component: Component) {
        switch component {
        case .retain(let n) where n <= 0, .delete(let n) where n <= 0: return
        case .insert(let s) where s.isEmpty: return
        default: break
        }
        switch (components.last, component) {
        case (.retain(let a)?, .retain(let b)): components[components.count - 1] = .retain(a + b)
        case (.delete(let a)?, .delete(let b)): components[components.count - 1] = .delete(a + b)
        case (.insert(let a)?, .insert(let b)): components[components.count - 1] = .insert(a + b)
        case (.delete(let d)?, .insert(let s)):
            // Insert-before-delete is the canonical order of an adjacent pair (same effect).
            components.removeLast()
            append(.insert(s))
            components.append(.delete(d))
        default: components.append(component)
        }
    }

    /// Scalars the operation reads from its input (retains and deletes): it needs a text at least this long.
    public var span: Int {
        components.reduce(0) { sum, c in
            switch c {
            case .retain(let n), .delete(let n): sum + n
            case .insert: sum
            }
        }
    }

    /// Applies the operation, or returns nil when it reaches past the end of `text`.
    public func apply(to text: String) -> String? {
        let scalars = Array(text.unicodeScalars)
        guard span <= scalars.count else { return nil }
        var out = String.UnicodeScalarView()
        var i = 0
        for c in components {
            switch c {
            case .retain(let n):
                out.append(contentsOf: scalars[i..<(i + n)])
                i += n
            case .delete(let n):
                i += n
            case .insert(let s):
                out.append(contentsOf: s.unicodeScalars)
            }
        }
        out.append(contentsOf: scalars[i...])
        return String(out)
    }

    /// The operation that undoes this one, given the text it was applied to.
    /// Precondition: `span <= text.unicodeScalars.count`.
    public func inverse(on text: String) -> TextOperation {
        let scalars = Array(text.unicodeScalars)
        var out: [Component] = []
        var i = 0
        for c in components {
            switch c {
            case .retain(let n):
                out.append(.retain(n))
                i += n
            case .delete(let n):
                var s = String.UnicodeScalarView()
                s.append(contentsOf: scalars[i..<(i + n)])
                out.append(.insert(String(s)))
                i += n
            case .insert(let s):
                out.append(.delete(s.unicodeScalars.count))
            }
        }
        return TextOperation(out)
    }

    /// Rebases `self` over `applied`, both made on the same text.
    ///
    /// `selfFirst` says which of two inserts at the same position goes first: the one the hub ordered
    /// earlier. Characters deleted by `applied` are not deleted again. TP1 holds:
    /// `a · b.transformed(over: a, selfFirst: false) == b · a.transformed(over: b, selfFirst: true)`.
    public func transformed(over applied: TextOperation, selfFirst: Bool) -> TextOperation {
        var out: [Component] = []
        var mine = ComponentCursor(components)
        var theirs = ComponentCursor(applied.components)
        while !(mine.atEnd && theirs.atEnd) {
            if case .insert(let s) = mine.current, selfFirst || !theirs.currentIsInsert {
                out.append(.insert(s))
                mine.advanceInsert()
                continue
            }
            if case .insert(let s) = theirs.current {
                out.append(.retain(s.unicodeScalars.count))
                theirs.advanceInsert()
                continue
            }
            if case .insert(let s) = mine.current {
                out.append(.insert(s))
                mine.advanceInsert()
                continue
            }
            // Both read the input: retain or delete (an exhausted cursor retains for ever).
            let n = min(mine.remaining, theirs.remaining)
            switch (mine.current, theirs.current) {
            case (.delete, .retain), (.delete, nil): out.append(.delete(n))
            case (.retain, .retain), (.retain, nil), (nil, .retain): out.append(.retain(n))
            default: break // deleted by the applied side already
            }
            mine.consume(n)
            theirs.consume(n)
        }
        return TextOperation(out)
    }
}

/// Walks an operation's components, splitting reads; past the end it is an endless retain.
private struct ComponentCursor {
    let components: [TextOperation.Component]
    var index = 0
    var used = 0

    init(_ components: [TextOperation.Component]) { self.components = components }

    var atEnd: Bool { index >= components.count }
    var current: TextOperation.Component? { atEnd ? nil : components[index] }
    var currentIsInsert: Bool { if case .insert = current { true } else { false } }

    /// Reads left in the current component; an exhausted cursor has unlimited retain.
    var remaining: Int {
        switch current {
        case .retain(let n)?, .delete(let n)?: n - used
        case .insert?: 0
        case nil: Int.max
        }
    }

    mutating func advanceInsert() { index += 1; used = 0 }

    mutating func consume(_ n: Int) {
        guard !atEnd else { return }
        used += n
        switch current {
        case .retain(let total)?, .delete(let total)?:
            if used >= total { index += 1; used = 0 }
        default: break
        }
    }
}
