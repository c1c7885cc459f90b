import Foundation

/// Revision times (milliseconds since the epoch, as the hub gives them) in words, for the screen and
/// the commands' plain output: how long ago (`2 min ago`) and the exact local time
/// (`2026-11-25 14:50:34`). The current time is a parameter, so what is shown can be tested.
public enum TimeWords {
    /// How long before `now`: `just now` (under 10 s, or a hub clock ahead of this one), `42 s ago`,
    /// `2 min ago`, `3 h ago`, `5 days ago`, and from 30 days on the date (`2026-10-01`).
    public static func ago(_ time: Int64, now: Date) -> String {
        let seconds = Int((now.timeIntervalSince1970 * 1000 - Double(time)) / 1000)
        switch seconds {
        case ..<10: return "just now"
        case ..<60: return "\(seconds) s ago"
        case ..<3600: return "\(seconds / 60) min ago"
        case ..<86_400: return "\(seconds / 3600) h ago"
        case ..<(30 * 86_400): return seconds < 2 * 86_400 ? "1 day ago" : "\(seconds / 86_400) days ago"
        default: return String(exact(time, timeZone: .current).prefix(10))
        }
    }

    /// The time in `timeZone` (the local one: `TZ`), to the second: `2026-11-25 14:50:34`.
    public static func exact(_ time: Int64, timeZone: TimeZone = .current) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date(time))
    }

    /// ISO 8601 in UTC, to the millisecond, for JSON output: `2026-11-25T13:50:34.123Z`.
    public static func iso(_ time: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date(time))
    }

    static func date(_ time: Int64) -> Date { Date(timeIntervalSince1970: Double(time) / 1000) }
}
