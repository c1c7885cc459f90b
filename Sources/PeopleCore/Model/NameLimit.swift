/// The name rule of SEMANTICS §1: at most 200 UTF-8 bytes, measured on the name's NFC form.
public enum NameLimit {
    public static let maxUTF8Bytes = 200

    /// The most Unicode scalars a name within the limit can have as stored. A name is stored as sent,
    /// and only its NFC form is measured: a composed character of b UTF-8 bytes stands for at most 1.5 b
    /// scalars (U+01D5 `Ǖ`, 2 bytes, is U+0055 U+0308 U+0304), so 200 bytes are at most 300 scalars.
    /// Twice the bytes leaves room for any later Unicode version. A text edit that reaches further is
    /// past the end of every name.
    public static let maxScalars = 2 * maxUTF8Bytes

    /// UTF-8 length of the NFC form of `name`.
    ///
    /// Uses the standard library's NFC normaliser (`_withNFCCodeUnits`, public but underscored) so the
    /// core needs no Foundation.
    public static func nfcByteCount(_ name: String) -> Int {
        // Fast path: ASCII is already NFC.
        if name.utf8.allSatisfy({ $0 < 0x80 }) { return name.utf8.count }
        var count = 0
        name._withNFCCodeUnits { _ in count += 1 }
        return count
    }

    public static func allows(_ name: String) -> Bool { nfcByteCount(name) <= maxUTF8Bytes }
}
