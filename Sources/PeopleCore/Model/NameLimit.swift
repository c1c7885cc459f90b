/// The name rule of SEMANTICS §1: at most 200 UTF-8 bytes, measured on the name's NFC form.
public enum NameLimit {
    public static let maxUTF8Bytes = 200

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
