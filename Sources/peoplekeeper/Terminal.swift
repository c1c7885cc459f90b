import Foundation

/// A key as the screen understands it.
enum Key: Hashable {
    case char(Character)
    case up, down, left, right, enter, escape, backspace, delete, tab, home, end, pageUp, pageDown
    case ctrl(Character)
}

/// The terminal in full-screen mode: raw input (no echo, no line buffering), the alternate screen,
/// and keys read on a thread of their own. `restore()` puts everything back (also at exit and on a
/// fatal signal).
final class Terminal: @unchecked Sendable {
    private var original = termios()
    private var raw = false
    let colors: Bool

    init() {
        let environment = ProcessInfo.processInfo.environment
        colors = environment["NO_COLOR"] == nil && environment["TERM"] != "dumb" && isatty(STDOUT_FILENO) == 1
    }

    var isInteractive: Bool { isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 }

    /// Columns and rows (80 × 24 when the terminal does not say).
    var size: (columns: Int, rows: Int) {
        var window = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &window) == 0, window.ws_col > 0, window.ws_row > 0 {
            return (Int(window.ws_col), Int(window.ws_row))
        }
        return (80, 24)
    }

    func enter() {
        tcgetattr(STDIN_FILENO, &original)
        var settings = original
        settings.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        settings.c_iflag &= ~tcflag_t(IXON | ICRNL | BRKINT | INPCK | ISTRIP)
        settings.c_oflag &= ~tcflag_t(OPOST)
        settings.c_cflag |= tcflag_t(CS8)
        withUnsafeMutableBytes(of: &settings.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &settings)
        raw = true
        write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J")
    }

    func restore() {
        guard raw else { return }
        raw = false
        write("\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l")
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &original)
    }

    func write(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Foundation.write(STDOUT_FILENO, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 { break }
            offset += n
        }
    }

    /// Reads keys until stdin closes, calling `handle` with each (on the reading thread).
    func readKeys(_ handle: @escaping @Sendable (Key) -> Void) {
        let thread = Thread {
            var decoder = KeyDecoder()
            var buffer = [UInt8](repeating: 0, count: 256)
            while true {
                let n = read(STDIN_FILENO, &buffer, buffer.count)
                if n <= 0 { break }
                for key in decoder.feed(buffer[0..<n]) { handle(key) }
            }
        }
        thread.name = "peoplekeeper-keys"
        thread.start()
    }
}

/// Bytes to keys: UTF-8 characters, control keys, and the usual escape sequences (arrows, Home, End,
/// Delete). A lone escape is Escape.
struct KeyDecoder {
    private var pending: [UInt8] = []

    mutating func feed(_ bytes: ArraySlice<UInt8>) -> [Key] {
        pending += bytes
        var keys: [Key] = []
        while !pending.isEmpty {
            guard let (key, used) = decodeOne() else { break }
            keys.append(key)
            pending.removeFirst(used)
        }
        return keys
    }

    private func decodeOne() -> (Key, Int)? {
        let b = pending[0]
        switch b {
        case 0x1B:
            guard pending.count > 1 else { return (.escape, 1) }
            guard pending[1] == UInt8(ascii: "[") || pending[1] == UInt8(ascii: "O") else { return (.escape, 1) }
            guard pending.count > 2 else { return nil }
            switch pending[2] {
            case UInt8(ascii: "A"): return (.up, 3)
            case UInt8(ascii: "B"): return (.down, 3)
            case UInt8(ascii: "C"): return (.right, 3)
            case UInt8(ascii: "D"): return (.left, 3)
            case UInt8(ascii: "H"): return (.home, 3)
            case UInt8(ascii: "F"): return (.end, 3)
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard let tilde = pending.firstIndex(of: UInt8(ascii: "~")) else { return pending.count > 8 ? (.escape, 1) : nil }
                let code = String(decoding: pending[2..<tilde], as: UTF8.self)
                let key: Key = switch code { case "3": .delete; case "1", "7": .home; case "4", "8": .end
                case "5": .pageUp; case "6": .pageDown; default: .escape }
                return (key, tilde + 1)
            default: return (.escape, 3)
            }
        case 0x0D, 0x0A: return (.enter, 1)
        case 0x7F, 0x08: return (.backspace, 1)
        case 0x09: return (.tab, 1)
        case 0x01...0x1A: return (.ctrl(Character(UnicodeScalar(b + 0x60))), 1)
        case 0x00..<0x20: return (.escape, 1)
        default:
            let length = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2
            guard pending.count >= length else { return nil }
            let text = String(decoding: pending[0..<length], as: UTF8.self)
            return (.char(text.first ?? "?"), length)
        }
    }
}
