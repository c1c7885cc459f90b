import Foundation

/// How far the hub's clock is from this one.
///
/// A revision's `time` is the hub's clock, and "2 min ago" is worked out on this one: a computer whose
/// clock is three minutes fast showed a change made this instant as "3 min ago" (and one three minutes
/// slow, every change of the last three minutes as "just now"). The hub's `pong` says its clock when it
/// answered (`time`, *this hub*); the middle of the ping's round trip on this clock is about that
/// moment, so the difference is the offset, within half the round trip. The twin of the web page's
/// `Web/js/hub-clock.js`.
///
/// Pure: the caller says when it sent each ping and when each pong came (milliseconds, its own clock).
public struct HubClock: Sendable, Equatable {
    /// This computer's clock, in the milliseconds since the epoch the hub's times are in.
    public static func localMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    /// A round trip longer than this says too little about when the hub answered: its pong is not used.
    public static let longestUsefulRoundTrip: Int64 = 10_000

    /// The hub's clock minus this one (milliseconds); 0 until a pong with `time` came.
    public private(set) var offset: Int64 = 0
    /// When each ping not yet answered on this connection was sent, oldest first (pongs come in order).
    private var sent: [Int64] = []

    public init() {}

    /// A ping went out at `local`.
    public mutating func pingSent(at local: Int64) { sent.append(local) }

    /// A pong came at `local`, saying the hub's clock was `time` (nil: a hub that does not say).
    public mutating func pong(time: Int64?, at local: Int64) {
        guard !sent.isEmpty else { return }
        let sentAt = sent.removeFirst()
        guard let time else { return }
        let roundTrip = local - sentAt
        guard roundTrip >= 0, roundTrip <= Self.longestUsefulRoundTrip else { return }
        offset = time - (sentAt + local) / 2
    }

    /// The connection ended: its pings will not be answered (the offset is kept).
    public mutating func connectionLost() { sent = [] }

    /// The hub's clock for `local`, this clock's time.
    public func hubTime(local: Int64) -> Int64 { local + offset }

    /// `hubTime(local:)` as a date, to measure a revision's `time` against (`TimeWords.ago`).
    public func hubDate(local: Int64) -> Date { TimeWords.date(hubTime(local: local)) }
}
