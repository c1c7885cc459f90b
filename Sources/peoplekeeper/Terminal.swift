import Foundation
import PeopleClient

/// A key as the screen understands it.
enum Key: Hashable {
    case char(Character)
    case up, down, left, right, enter, escape, backspace, delete, tab, home, end, pageUp, pageDown
    case ctrl(Character)
    /// Text pasted at once (the terminal's bracketed paste): typed into a name as text, never run as
    /// keys (a paste of "Sue⏎Andy" added Sue, then "d" and "y" deleted her).
    case paste(String)
    /// A key the screen has no use for (a function key, Insert, a sequence it does not know): read
    /// whole, so that no part of it acts as another key.
    case ignored
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

    /// `TERM`, as the environment has it.
    var name: String? { ProcessInfo.processInfo.environment["TERM"] }

    /// The terminal moves its cursor (the screen draws each line at its row): not a `dumb` one, nor one
    /// with no `TERM` at all.
    var canDrawScreen: Bool { !(name ?? "").isEmpty && name != "dumb" }

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
        // The alternate screen, the cursor hidden, and bracketed paste on.
        write("\u{1B}[?1049h\u{1B}[?25l\u{1B}[?2004h\u{1B}[H\u{1B}[2J")
    }

    func restore() {
        guard raw else { return }
        raw = false
        write("\u{1B}[0m\u{1B}[?2004l\u{1B}[?25h\u{1B}[?1049l")
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &original)
    }

    /// Writes a frame of the screen; nothing once the terminal is restored (a frame drawn by a late
    /// update after quitting landed on the shell's screen).
    func draw(_ text: String) {
        guard raw else { return }
        write(text)
    }

    /// Ctrl-Z, or SIGTSTP from elsewhere: the terminal as the shell had it, the process stopped; when it
    /// is continued (`fg`), full-screen mode again (`redraw` then draws the screen).
    func suspend(redraw: () -> Void) {
        guard raw else { return }
        restore()
        // SIGSTOP: SIGTSTP is the screen's own signal source's (libdispatch keeps it from stopping us).
        // To this thread, so that it does not enter full-screen mode again before the stop (`JobStop`).
        JobStop.untilContinued()
        // Continued (`fg`): the shell may set the terminal back to its own modes after it sends
        // SIGCONT; `resumed` (on SIGCONT) enters raw mode again if it did.
        enter()
        redraw()
    }

    /// After SIGCONT: raw mode again, whatever the shell did to the terminal while taking it back.
    func resumed() {
        guard raw else { return }
        var settings = termios()
        tcgetattr(STDIN_FILENO, &settings)
        guard settings.c_lflag & tcflag_t(ICANON) != 0 else { return }
        raw = false
        enter()
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
        // Foundation on Linux names only a running thread, and only once `start()` has returned.
        let started = DispatchSemaphore(value: 0)
        let thread = Thread {
            started.wait()
            Thread.current.name = "pk-keys"
            var decoder = KeyDecoder()
            var buffer = [UInt8](repeating: 0, count: 256)
            while true {
                let n = read(STDIN_FILENO, &buffer, buffer.count)
                if n <= 0 { break }
                for key in decoder.feed(buffer[0..<n]) { handle(key) }
            }
        }
        thread.start()
        started.signal()
    }
}

/// Bytes to keys: UTF-8 characters, control keys, and escape sequences read whole (CSI and SS3: the
/// arrows, Home, End, Delete, PgUp / PgDn, with or without modifiers; anything else, such as a function
/// key, is `.ignored`), and a bracketed paste as one `.paste`. A lone escape is Escape; escape and a
/// character (Alt and the key, or Escape pressed just before it) are Escape and that character.
struct KeyDecoder {
    private var pending: [UInt8] = []
    /// Inside a bracketed paste: what has come of it so far.
    private var pasting: [UInt8]?

    private static let pasteEnd: [UInt8] = Array("\u{1B}[201~".utf8)

    mutating func feed(_ bytes: ArraySlice<UInt8>) -> [Key] {
        pending += bytes
        var keys: [Key] = []
        while !pending.isEmpty {
            if pasting != nil {
                guard let end = Self.find(Self.pasteEnd, in: pending) else {
                    // Keep what could be the start of the end marker for the next read.
                    let keep = min(pending.count, Self.pasteEnd.count - 1)
                    pasting! += pending.dropLast(keep)
                    pending = Array(pending.suffix(keep))
                    break
                }
                pasting! += pending[..<end]
                keys.append(.paste(String(decoding: pasting!, as: UTF8.self)))
                pasting = nil
                pending.removeFirst(end + Self.pasteEnd.count)
                continue
            }
            guard let (key, used) = decodeOne() else { break }
            pending.removeFirst(used)
            if key == .paste("") {
                pasting = []
                continue
            }
            keys.append(key)
        }
        return keys
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i..<(i + needle.count)].elementsEqual(needle) {
            return i
        }
        return nil
    }

    private func decodeOne() -> (Key, Int)? {
        let b = pending[0]
        switch b {
        case 0x1B:
            guard pending.count > 1 else { return (.escape, 1) }
            if pending[1] == UInt8(ascii: "[") { return csi() }
            if pending[1] == UInt8(ascii: "O") {
                guard pending.count > 2 else { return nil }
                return (Self.cursorKey(pending[2]) ?? .ignored, 3)  // else F1–F4 and the keypad
            }
            return (.escape, 1)
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

    /// The arrows, Home and End by the final byte of their sequence (`ESC [ A`, `ESC O H`, `ESC [ 1 ; 2 A`).
    private static func cursorKey(_ final: UInt8) -> Key? {
        switch final {
        case UInt8(ascii: "A"): .up
        case UInt8(ascii: "B"): .down
        case UInt8(ascii: "C"): .right
        case UInt8(ascii: "D"): .left
        case UInt8(ascii: "H"): .home
        case UInt8(ascii: "F"): .end
        default: nil
        }
    }

    /// `ESC [`, parameters, intermediates and a final byte (ECMA-48); nil while incomplete. The start of
    /// a bracketed paste is `.paste("")` (`feed` then gathers it).
    private func csi() -> (Key, Int)? {
        var i = 2
        while i < pending.count, (0x20...0x3F).contains(pending[i]) { i += 1 }
        guard i < pending.count else { return pending.count > 32 ? (.ignored, pending.count) : nil }
        let final = pending[i]
        guard (0x40...0x7E).contains(final) else { return (.escape, 1) }  // not a sequence after all
        let parameters = String(decoding: pending[2..<i], as: UTF8.self)
        let first = parameters.split(separator: ";").first.map(String.init) ?? ""
        if let key = Self.cursorKey(final) { return (key, i + 1) }
        let key: Key = switch final {
        case UInt8(ascii: "~"):
            switch first {
            case "3": .delete
            case "1", "7": .home
            case "4", "8": .end
            case "5": .pageUp
            case "6": .pageDown
            case "200": .paste("")
            default: .ignored
            }
        default: .ignored
        }
        return (key, i + 1)
    }
}
