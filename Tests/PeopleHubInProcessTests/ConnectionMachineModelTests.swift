import Foundation
import PeopleCore
@testable import PeopleHub
import PeopleTestSupport
import Testing

/// `ConnectionMachine` driven at random against a model of what its doc comments and PROTOCOL.md promise.
///
/// A seeded driver plays the hub and a client at once: hellos (with a token in token mode), pings that
/// carry an id in their seq, binary frames, frames over the size limit, token answers (granted with an
/// `exp`, refused), the room joined / full / on another node / failing to load, reads from the store
/// (`fetch` / `fetched`), the once-a-second expiry sweep, a session resumed elsewhere, an admin's
/// deletion, the close, and time passing (in a quarter of the runs at a rate limit low enough to bite).
/// Each event's outcome is judged at once against the model, with the promise it comes from; the
/// hand-back of waiting frames is judged by the ids they carry. Checked in session 45 against eight
/// planted bugs, each caught by several seeds: `maxWaitingFrames` off by one, the first waiting frame
/// dropped, the waiting frames reversed, a 1008 close that forgot the session, the token's `exp`
/// unchecked while fetching, a session left twice, a too-large frame that waited while opening, a
/// room-full that kept the waiting frames. It found no defect in the machine. Replay one seed:
/// `CM_MODEL_SEED=7 swift test --skip-build --filter ConnectionMachineModelTests` (`CM_MODEL_TRACE=1`
/// prints the driver's steps).
@Suite("Connection state machine, driven at random against a model of its documented contract")
struct ConnectionMachineModelTests {
    static let seeds: [UInt64] = {
        if let one = ProcessInfo.processInfo.environment["CM_MODEL_SEED"].flatMap(UInt64.init) { return [one] }
        return Array(0..<200)
    }()

    @Test("every promise of the machine's doc comments holds over a seeded random run", arguments: seeds)
    func randomRun(seed: UInt64) {
        var run = MachineRun(seed: seed)
        run.play()
        if ProcessInfo.processInfo.environment["CM_MODEL_STATS"] != nil {
            let kinds = ["joined s", "waited", "fetched →", "too many", "expire(", "rate", "room full", "redirected → true", "closed → Optional"]
            print("stats seed \(seed): " + kinds.map { kind in "\(kind)=\(run.trace.filter { $0.contains(kind) }.count)" }.joined(separator: " "))
        }
        if ProcessInfo.processInfo.environment["CM_MODEL_TRACE"] != nil {
            print("seed \(seed):\n" + run.trace.joined(separator: "\n"))
        }
        #expect(run.problems.isEmpty, """
            seed \(seed) (replay: CM_MODEL_SEED=\(seed)): \(run.problems.count) broken promise(s):
            \(run.problems.prefix(8).joined(separator: "\n"))
            last steps: \(run.trace.suffix(20).joined(separator: "; "))
            """)
    }
}

private struct MachineRun {
    typealias M = ConnectionMachine

    /// The model's state: the doc comment's diagram.
    enum Phase: Equatable {
        case awaitingHello, authorizing, opening, joined(SessionID), fetching(SessionID), closed(leaving: SessionID?)

        var session: SessionID? {
            switch self {
            case .joined(let s), .fetching(let s): s
            default: nil
            }
        }
    }

    /// A frame the driver sent that may wait: a ping carrying its id as seq, or a binary frame.
    enum Sent: Equatable {
        case ping(Int), binary(Int)
        var id: Int { switch self { case .ping(let id), .binary(let id): id } }
    }

    var random: SeededRandom
    var m: M
    var phase: Phase = .awaitingHello
    /// The frames that waited, in arrival order ("Frames that arrive while authorizing, opening or
    /// fetching wait, in order, and are handed back when the room is joined or the history has been read").
    var waiting: [Sent] = []
    /// Every id handed to the room (delivered, or refused by it as the joined machine's parse order says).
    var handled: [Int] = []
    var nextId = 1
    var sessions = 0
    var left: Set<SessionID> = []
    var now: Int64 = 1_000_000
    /// The `exp` of the token that opened the room (ms), while one did.
    var expires: Int64?
    let needsToken: Bool
    /// Whether the rate limit may bite (then a frame may be dropped, refused `rate-limited`, or close 1008).
    let limited: Bool
    var problems: [String] = []
    var trace: [String] = []

    init(seed: UInt64) {
        random = SeededRandom(seed: seed &* 0x9E37_79B9 &+ 17)
        needsToken = random.chance(0.5)
        limited = random.chance(0.25)
        m = M(room: try! RoomName("r"), needsToken: needsToken, opsPerSecond: limited ? 5 : 1_000_000, now: now)
    }

    mutating func fail(_ promise: String, _ detail: String) {
        problems.append("\(promise): \(detail) [step \(trace.count), phase \(phase)]")
    }

    static func text(_ s: String) -> M.Frame { .init(bytes: Array(s.utf8), binary: false) }

    var hello: M.Frame {
        Self.text(needsToken ? #"{"type":"hello","protocol":1,"user":"ann","token":"t"}"# : #"{"type":"hello","protocol":1,"user":"ann"}"#)
    }

    mutating func play() {
        for _ in 0..<random.int(40...160) {
            step()
            checkState()
        }
        // The end: the close. "The connection closed: the session it carried leaves the room."
        closeConnection()
        let sorted = handled.sorted()
        if handled != sorted || Set(handled).count != handled.count {
            fail("frames are handed to the room once each, in arrival order", "\(handled)")
        }
    }

    /// The machine's state as the diagram names it, compared with the model's.
    mutating func checkState() {
        let actual: Phase = switch m.state {
        case .awaitingHello: .awaitingHello
        case .authorizing: .authorizing
        case .opening: .opening
        case .joined(let s, _, _): .joined(s)
        case .fetching(let s, _, _, _): .fetching(s)
        case .closed(let leaving): .closed(leaving: leaving)
        }
        if actual != phase { fail("the machine is in the state the model expects", "machine \(actual)") ; phase = actual }
        if m.session != phase.session { fail("`session` is the joined session", "\(String(describing: m.session))") }
    }

    mutating func step() {
        if isClosed, random.chance(0.3) {
            // A new connection (a client's reconnect): the driver goes on with a fresh machine.
            m = M(room: try! RoomName("r"), needsToken: needsToken, opsPerSecond: limited ? 5 : 1_000_000, now: now)
            phase = .awaitingHello; waiting = []; expires = nil
            trace.append("new connection")
            return
        }
        // The hub answers soon: a machine waiting for a token or a room mostly gets its answer next.
        if phase == .authorizing, random.chance(0.4) { return tokenAnswer() }
        if phase == .opening, random.chance(0.4) { return roomAnswer() }
        switch random.int(0...99) {
        case 0..<30: sendFrame(random.chance(0.85) ? .ping(nextId) : .binary(nextId))
        case 30..<36: oversized()
        case 36..<44: sendHello()
        case 44..<50: tokenAnswer()
        case 50..<58: roomAnswer()
        case 58..<66: fetchOrFetched()
        case 66..<72: sweep()
        case 72..<86: now += Int64(random.int(1...1_500)); trace.append("+time → \(now)")
        case 86..<89: trace.append("replaced"); m.replaced(); phase = .closed(leaving: nil); waiting = []
        case 89..<91: trace.append("room deleted"); m.roomDeleted(); phase = .closed(leaving: nil); waiting = []
        case 91..<94: closeConnection()
        case 94..<96:
            // A burst, near `maxWaitingFrames` while the machine waits.
            let count = random.int(M.maxWaitingFrames - 20...M.maxWaitingFrames + 20)
            trace.append("burst of \(count)")
            for _ in 0..<count where !isClosed { sendFrame(.ping(nextId)) }
        default: sendFrame(.ping(nextId))
        }
    }

    /// The token's `exp` is checked first thing for every frame (and by the sweep): `unauthorized`, close 1008.
    mutating func expiresNow() -> Bool {
        guard let expires, now >= expires else { return false }
        switch phase {
        case .opening, .joined, .fetching: return true
        default: return false
        }
    }

    /// Judges an outcome the rate limit may explain; true when it did (the frame went no further).
    mutating func rateOutcome(_ outcome: M.FrameOutcome) -> Bool {
        guard limited else { return false }
        switch outcome {
        case .ignore:
            return true
        case .refuse(let error, false) where error.code == .rateLimited:
            return true
        case .close(1008, "rate limit"):
            phase = .closed(leaving: phase.session); waiting = []
            return true
        default:
            return false
        }
    }

    var isClosed: Bool { if case .closed = phase { true } else { false } }

    /// What comes before a frame's parse order: a closed machine ignores it, an expired token ends the
    /// session, the rate limit drops it. True when one of them judged the outcome.
    mutating func judgedBeforeParsing(_ outcome: M.FrameOutcome) -> Bool {
        if isClosed {
            if outcome != .ignore { fail("a closed machine reads nothing more", "\(outcome)") }
            return true
        }
        if expiresNow() { expectExpiry(outcome); return true }
        return rateOutcome(outcome)
    }

    mutating func expectExpiry(_ outcome: M.FrameOutcome) {
        guard case .expire(let error) = outcome, error.code == .unauthorized else {
            return fail("a token's exp ends what it opened: the next frame gets unauthorized and the connection closes", "\(outcome)")
        }
        phase = .closed(leaving: phase.session); waiting = []
    }

    mutating func sendFrame(_ sent: Sent) {
        nextId += 1
        let frame: M.Frame = switch sent {
        case .ping(let id): Self.text(#"{"type":"ping","seq":\#(id)}"#)
        case .binary: .init(bytes: [0x7B, 0x7D], binary: true)
        }
        let outcome = m.receive(frame, now: now)
        trace.append("\(sent) → \(outcome)")
        if judgedBeforeParsing(outcome) { return }
        switch phase {
        case .awaitingHello:
            let seq: Int? = if case .ping(let id) = sent { id } else { nil }
            guard case .refuse(let error, false) = outcome, error.code == .notHello, error.seq == seq else {
                return fail("a frame before hello is not-hello (with its seq), and the connection stays open", "\(outcome)")
            }
        case .authorizing, .opening, .fetching:
            if waiting.count < M.maxWaitingFrames {
                guard outcome == .wait else { return fail("frames that arrive while waiting wait", "\(outcome)") }
                waiting.append(sent)
            } else {
                guard case .close(1008, _) = outcome else {
                    return fail("at most maxWaitingFrames frames wait, then the connection is closed (1008)", "\(outcome)")
                }
                phase = .closed(leaving: phase.session); waiting = []
            }
        case .joined(let session):
            handJoined(sent, outcome, session: session)
        case .closed:
            break
        }
    }

    /// A frame the joined machine reads: a ping goes to the room, a binary frame is `bad-message`.
    mutating func handJoined(_ sent: Sent, _ outcome: M.FrameOutcome, session: SessionID) {
        switch sent {
        case .ping(let id):
            guard outcome == .deliver(.ping(seq: id), session: session) else {
                return fail("a joined connection's message goes to the room with its session", "\(outcome)")
            }
        case .binary:
            guard case .refuse(let error, false) = outcome, error.code == .badMessage else {
                return fail("a binary frame is not part of the protocol: bad-message, not fatal", "\(outcome)")
            }
        }
        handled.append(sent.id)
    }

    /// Frames that waited, handed back in order once joined (or the read done).
    mutating func handBack(_ frames: [M.Frame]?, promise: String) {
        guard let frames else { return fail(promise, "nil") }
        if frames.count != waiting.count { fail(promise, "\(frames.count) frames handed back, \(waiting.count) waited") }
        let owed = waiting
        waiting = []
        for (sent, frame) in zip(owed, frames) {
            let outcome = m.receiveWaiting(frame)
            trace.append("  waited \(sent) → \(outcome)")
            guard case .joined(let session) = phase else { break }
            handJoined(sent, outcome, session: session)
        }
    }

    mutating func oversized() {
        let outcome = m.receiveOversized(bytes: 2_000_000, limit: 1_048_576, now: now)
        trace.append("oversized → \(outcome)")
        if judgedBeforeParsing(outcome) { return }
        guard case .refuse(let error, false) = outcome, error.code == .tooLarge, error.seq == nil else {
            return fail("a frame over the limit is dropped unread: too-large, no seq, the connection stays open", "\(outcome)")
        }
    }

    mutating func sendHello() {
        guard phase == .awaitingHello else { return sendFrame(.ping(nextId)) }
        let outcome = m.receive(hello, now: now)
        trace.append("hello → \(outcome)")
        if rateOutcome(outcome) { return }
        if needsToken {
            guard case .authorize("t", _) = outcome else { return fail("token mode: a hello's token is checked", "\(outcome)") }
            phase = .authorizing
        } else {
            guard case .open(_, .editor) = outcome else { return fail("open mode: a hello opens the room as an editor", "\(outcome)") }
            phase = .opening
        }
    }

    mutating func tokenAnswer() {
        let granted = random.chance(0.7)
        let exp = now + Int64(random.int(200...6_000))
        let result: Result<TokenGrant, AuthFailure> = granted
            ? .success(TokenGrant(role: .editor, expires: Date(timeIntervalSince1970: Double(exp) / 1000)))
            : .failure(AuthFailure("bad signature"))
        let outcome = m.tokenChecked(result)
        trace.append("token \(granted ? "exp \(exp)" : "refused") → \(outcome)")
        guard phase == .authorizing else {
            if outcome != .unexpected { fail("a token answer when none is awaited is unexpected", "\(outcome)") }
            return
        }
        if granted {
            guard case .open(_, .editor) = outcome else { return fail("a granted token opens the room with its role", "\(outcome)") }
            phase = .opening
            expires = exp
        } else {
            guard case .refuse(let error, true) = outcome, error.code == .unauthorized else {
                return fail("a refused token is unauthorized and closes", "\(outcome)")
            }
            phase = .closed(leaving: nil); waiting = []
        }
    }

    mutating func roomAnswer() {
        let opening = phase == .opening
        switch random.int(0...9) {
        case 0..<6:
            sessions += 1
            let session: SessionID = "s\(sessions)"
            let frames = m.joined(session: session)
            trace.append("joined \(session) → \(frames.map { "\($0.count) frames" } ?? "nil")")
            guard opening else {
                if frames != nil { fail("joined when not opening is nil", "\(frames!.count) frames") }
                return
            }
            phase = .joined(session)
            handBack(frames, promise: "the room took the hello: the frames that waited, to receive in order")
        case 6..<8:
            let error = m.refused(ProtocolError(.roomFull, "full"))
            trace.append("room full → \(String(describing: error?.code))")
            guard opening else {
                if error != nil { fail("room-full when not opening is nil", "\(error!)") }
                return
            }
            if error?.code != .roomFull { fail("room-full is answered", "\(String(describing: error))") }
            phase = .awaitingHello; waiting = []; expires = nil
        case 8:
            let went = m.redirected()
            trace.append("redirected → \(went)")
            if went != opening { fail("a redirect closes an opening connection, and only one", "\(went)") }
            if opening { phase = .closed(leaving: nil); waiting = [] }
        default:
            let error = m.roomFailed()
            trace.append("room failed → \(String(describing: error?.code))")
            if (error != nil) != opening || (opening && error?.code != .serverError) {
                fail("a room that cannot be loaded is server-error for an opening connection", "\(String(describing: error))")
            }
            if opening { phase = .closed(leaving: nil); waiting = [] }
        }
    }

    mutating func fetchOrFetched() {
        let fetching = if case .fetching = phase { true } else { false }
        if fetching, random.chance(0.7) {
            let frames = m.fetched()
            trace.append("fetched → \(frames.map { "\($0.count) frames" } ?? "nil")")
            phase = .joined(phase.session!)
            return handBack(frames, promise: "the history was read: the frames that waited, to receive in order")
        }
        if !fetching, random.chance(0.2) {
            let frames = m.fetched()
            trace.append("fetched → \(frames.map { "\($0.count) frames" } ?? "nil")")
            if frames != nil { fail("fetched is nil when not fetching", "\(frames!.count) frames") }
            return
        }
        let started = m.fetch()
        trace.append("fetch → \(started)")
        if case .joined(let session) = phase {
            if !started { return fail("a joined session's read from the store starts: its later frames wait", "false") }
            phase = .fetching(session)
        } else if started {
            fail("fetch is false when not joined (already fetching, or closed)", "true")
        }
    }

    mutating func sweep() {
        let outcome = m.expired(now: now)
        trace.append("sweep → \(String(describing: outcome))")
        if expiresNow() {
            guard let outcome else { return fail("the sweep ends a session whose token expired", "nil") }
            expectExpiry(outcome)
        } else if outcome != nil {
            fail("the sweep ends nothing before exp, without a token, or before one was accepted", "\(outcome!)")
        }
    }

    mutating func closeConnection() {
        let leaving = m.closed()
        trace.append("closed → \(String(describing: leaving))")
        let expected: SessionID? = switch phase {
        case .joined(let s), .fetching(let s): s
        case .closed(let leaving): leaving
        default: nil
        }
        if leaving != expected { fail("the connection closed: the session it carried leaves the room (nil if none)", "\(String(describing: leaving))") }
        if let leaving {
            if left.contains(leaving) { fail("a session leaves the room once", leaving) }
            left.insert(leaving)
        }
        phase = .closed(leaving: nil); waiting = []
    }
}
