import Foundation
import PeopleCore
@testable import PeopleHub
import Testing

/// The per-connection state machine alone: every state, every event, PROTOCOL.md's parse order and the
/// rate limit, with time as a parameter. No hub, no socket.
@Suite("Connection state machine")
struct ConnectionMachineTests {
    typealias M = ConnectionMachine
    static let room = try! RoomName("r")

    static func machine(needsToken: Bool = false, opsPerSecond: Int = 100) -> M {
        M(room: room, needsToken: needsToken, opsPerSecond: opsPerSecond, now: 0)
    }

    static func text(_ s: String) -> M.Frame { .init(bytes: Array(s.utf8), binary: false) }
    static let hello = text(#"{"type":"hello","protocol":1,"user":"ann"}"#)
    static let submit = text(#"{"type":"submit","seq":1,"base":0,"ops":[]}"#)

    /// The error code of a refusal, and whether the connection closes after it.
    static func refusal(_ outcome: M.FrameOutcome) -> (ErrorCode, seq: Int?, close: Bool)? {
        if case .refuse(let error, let close) = outcome { (error.code, error.seq, close) } else { nil }
    }

    /// `#expect` without its closure, for expressions that change the machine (a mutating call cannot
    /// be captured by the macro).
    func check(_ condition: Bool, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(condition, comment, sourceLocation: sourceLocation)
    }

    static func joined(_ m: inout M, session: SessionID = "s1") {
        _ = m.receive(hello, now: 0)
        _ = m.joined(session: session)
    }

    // MARK: awaiting hello

    @Test("before hello: each failing check of the parse order gives its code, and only fatal ones close",
          arguments: [
              (#"{"type":"hello""#, ErrorCode.badJSON, false),
              (#"{"type":"submit","seq":4,"base":0,"ops":[]}"#, .notHello, false),
              (#"{"type":"hello","user":"ann"}"#, .badMessage, false),
              (#"{"type":"hello","protocol":"1","user":"ann"}"#, .badMessage, false),
              (#"{"type":"hello","protocol":2,"user":"ann"}"#, .unsupportedProtocol, true),
              (#"{"type":"hello","protocol":1,"user":""}"#, .badMessage, false),
              (#"{"type":"hello","protocol":1,"user":"\#(String(repeating: "x", count: 65))"}"#, .badMessage, false),
          ])
    func helloParseOrder(frame: String, code: ErrorCode, closes: Bool) {
        var m = Self.machine()
        let outcome = m.receive(Self.text(frame), now: 0)
        let got = Self.refusal(outcome)
        #expect(got?.0 == code && got?.close == closes, "\(outcome)")
        if closes {
            guard case .closed = m.state else { Issue.record("\(m.state)"); return }
            check(m.receive(Self.hello, now: 0) == .ignore, "a closed machine ignores frames")
        } else {
            guard case .awaitingHello = m.state else { Issue.record("\(m.state)"); return }
        }
    }

    @Test("a frame before hello keeps its seq in not-hello; a binary first frame is not-hello")
    func notHelloSeqAndBinary() {
        var m = Self.machine()
        check(Self.refusal(m.receive(Self.text(#"{"type":"undo","seq":7}"#), now: 0))?.seq == 7)
        check(Self.refusal(m.receive(.init(bytes: [1, 2], binary: true), now: 0))?.0 == .notHello)
    }

    @Test("open mode: a hello opens the room as an editor")
    func openMode() {
        var m = Self.machine()
        guard case .open(let hello, .editor) = m.receive(Self.hello, now: 0) else { Issue.record("\(m.state)"); return }
        #expect(hello.user == "ann")
        #expect(m.opening?.role == .editor)
    }

    @Test("token mode: a hello without a token is unauthorized and closes; with one it is checked")
    func tokenMode() {
        var m = Self.machine(needsToken: true)
        let got = Self.refusal(m.receive(Self.hello, now: 0))
        #expect(got?.0 == .unauthorized && got?.close == true)

        var n = Self.machine(needsToken: true)
        let outcome = n.receive(Self.text(#"{"type":"hello","protocol":1,"user":"ann","token":"t0k"}"#), now: 0)
        guard case .authorize("t0k", _) = outcome, case .authorizing = n.state else { Issue.record("\(outcome)"); return }
    }

    // MARK: authorizing

    @Test("authorizing: frames wait; a good token opens with its role, a bad one is unauthorized and closes")
    func authorizing() {
        let withToken = Self.text(#"{"type":"hello","protocol":1,"user":"ann","token":"t"}"#)
        var m = Self.machine(needsToken: true)
        _ = m.receive(withToken, now: 0)
        check(m.receive(Self.submit, now: 0) == .wait)
        guard case .open(_, .viewer) = m.tokenChecked(.success(TokenGrant(role: .viewer, expires: .distantFuture))) else { Issue.record("\(m.state)"); return }
        check(m.joined(session: "s1")?.count == 1, "the frame that waited comes back")

        var n = Self.machine(needsToken: true)
        _ = n.receive(withToken, now: 0)
        guard case .refuse(let error, true) = n.tokenChecked(.failure(AuthFailure("expired"))) else {
            Issue.record("\(n.state)")
            return
        }
        #expect(error.code == .unauthorized && error.message == "expired")
        check(n.tokenChecked(.success(TokenGrant(role: .editor, expires: .distantFuture))) == .unexpected, "a second answer is a typed outcome")
    }

    @Test("a token answer when none was asked for is unexpected")
    func unexpectedToken() {
        var m = Self.machine()
        check(m.tokenChecked(.success(TokenGrant(role: .editor, expires: .distantFuture))) == .unexpected)
        check(m.joined(session: "s") == nil, "joined before any hello")
        check(m.refused(ProtocolError(.roomFull, "x")) == nil)
        check(m.redirected() == false)
        check(m.roomFailed() == nil)
        check(m.roomWasDeleted(at: 0) == false)
    }

    // MARK: opening

    @Test("opening: frames wait in order, and come back when the room is joined")
    func openingWaits() {
        var m = Self.machine()
        _ = m.receive(Self.hello, now: 0)
        check(m.receive(Self.submit, now: 0) == .wait)
        check(m.receive(Self.text("[]"), now: 0) == .wait)
        let waiting = m.joined(session: "s1")
        #expect(waiting?.map { String(decoding: $0.bytes, as: UTF8.self) } == [
            #"{"type":"submit","seq":1,"base":0,"ops":[]}"#, "[]",
        ])
        #expect(m.session == "s1")
    }

    @Test("opening: too many frames before welcome close the connection (1008)")
    func tooManyWaiting() {
        var m = Self.machine(opsPerSecond: 10_000)
        _ = m.receive(Self.hello, now: 0)
        for _ in 0..<M.maxWaitingFrames { check(m.receive(Self.submit, now: 0) == .wait) }
        check(m.receive(Self.submit, now: 0) == .close(code: 1008, reason: "too many frames before welcome"))
    }

    @Test("opening: room-full sends the hello back to awaiting hello; redirect and load failure close")
    func openingEnds() {
        var m = Self.machine()
        _ = m.receive(Self.hello, now: 0)
        _ = m.receive(Self.submit, now: 0)
        check(m.refused(ProtocolError(.roomFull, "full"))?.code == .roomFull)
        guard case .awaitingHello = m.state else { Issue.record("\(m.state)"); return }
        guard case .open = m.receive(Self.hello, now: 0) else { Issue.record("a new hello is taken"); return }
        check(m.joined(session: "s")?.isEmpty == true, "frames that waited before room-full were dropped")

        var r = Self.machine()
        _ = r.receive(Self.hello, now: 0)
        check(r.redirected())
        check(r.receive(Self.hello, now: 0) == .ignore)

        var f = Self.machine()
        _ = f.receive(Self.hello, now: 0)
        check(f.roomFailed()?.code == .serverError)
        guard case .closed = f.state else { Issue.record("\(f.state)"); return }
    }

    @Test("opening a room the store remembers deleting: a hello that names a revision from before the deletion is turned away (closed); one that names none, or one made after the deletion (a store restored from a backup), goes on to make the room",
          arguments: [(#"{"type":"hello","protocol":1,"user":"ann","since":3}"#, true),
                      (#"{"type":"hello","protocol":1,"user":"ann","since":3,"sinceTime":1700000000500}"#, true),
                      (#"{"type":"hello","protocol":1,"user":"ann","since":3,"sinceTime":1700000000501}"#, false),
                      (#"{"type":"hello","protocol":1,"user":"ann","since":3,"sinceTime":1700000000000}"#, true),
                      (#"{"type":"hello","protocol":1,"user":"ann","since":0,"sinceTime":1700000000000}"#, true),
                      (#"{"type":"hello","protocol":1,"user":"ann","since":0}"#, false),
                      (#"{"type":"hello","protocol":1,"user":"ann"}"#, false)])
    func openingADeletedRoom(hello: String, turnedAway: Bool) {
        var m = Self.machine()
        _ = m.receive(Self.text(hello), now: 0)
        check(m.roomWasDeleted(at: 1_700_000_000_500) == turnedAway)
        if turnedAway {
            guard case .closed(leaving: nil) = m.state else { Issue.record("\(m.state)"); return }
            check(m.receive(Self.submit, now: 0) == .ignore)
        } else {
            check(m.opening != nil, "still opening: it makes the room")
        }
    }

    // MARK: joined

    @Test("joined: binary is bad-message, bad JSON is bad-json; a sequenced request that cannot be read goes to the room with its seq and error (it answers resent seqs first), any other keeps its seq")
    func joinedParseOrder() {
        var m = Self.machine()
        Self.joined(&m)
        check(Self.refusal(m.receive(.init(bytes: [0], binary: true), now: 0))?.0 == .badMessage)
        check(Self.refusal(m.receive(Self.text("{"), now: 0))?.0 == .badJSON)
        guard case .deliverUnreadable(3, let envelope, "s1") = m.receive(Self.text(#"{"type":"submit","seq":3,"ops":[]}"#), now: 0)
        else { Issue.record("a bad envelope with a seq goes to the room"); return }
        #expect(envelope.code == .badMessage)
        guard case .deliverUnreadable(4, let op, "s1") = m.receive(Self.text(#"{"type":"submit","seq":4,"base":0,"ops":[{"op":"x","tag":1}]}"#), now: 0)
        else { Issue.record("a bad op goes to the room"); return }
        #expect(op.code == .invalidOp)
        let log = Self.refusal(m.receive(Self.text(#"{"type":"nope","seq":5}"#), now: 0))
        #expect(log?.0 == .badMessage && log?.seq == 5 && log?.close == false, "\(String(describing: log))")
        guard case .deliver(.submit(let submit), "s1") = m.receive(Self.submit, now: 0) else {
            Issue.record("a good submit goes to the room")
            return
        }
        #expect(submit.seq == 1)
    }

    @Test("a replaced session's connection stops speaking for it; a close hands the session back once")
    func endings() {
        var m = Self.machine()
        Self.joined(&m)
        check(m.closed() == "s1")
        check(m.closed() == nil)

        var r = Self.machine()
        Self.joined(&r)
        r.replaced()
        check(r.closed() == nil, "the session lives on on the other connection")
        check(r.receive(Self.submit, now: 0) == .ignore)
    }

    @Test("a connection of a deleted room reads nothing more, and no session leaves at its close")
    func roomDeleted() {
        var m = Self.machine()
        Self.joined(&m)
        m.roomDeleted()
        check(m.receive(Self.submit, now: 0) == .ignore)
        check(m.session == nil)
        check(m.closed() == nil, "the room is gone: nothing leaves it")
    }

    // MARK: a token's end

    static let helloWithToken = text(#"{"type":"hello","protocol":1,"user":"ann","token":"t"}"#)

    /// A token-mode machine joined as `s1` with a token that expires at `expires` ms.
    static func joinedWithToken(expires: Int64) -> M {
        var m = machine(needsToken: true)
        _ = m.receive(helloWithToken, now: 0)
        _ = m.tokenChecked(.success(TokenGrant(role: .editor, expires: Date(timeIntervalSince1970: Double(expires) / 1000))))
        _ = m.joined(session: "s1")
        return m
    }

    @Test("a token's exp ends its session: the next frame, or the sweep's ask, is unauthorized and closes; the session leaves on close")
    func tokenExpiry() {
        var m = Self.joinedWithToken(expires: 60_000)
        check(m.expired(now: 59_999) == nil, "valid until its exp")
        guard case .deliver = m.receive(Self.submit, now: 59_999) else { Issue.record("before exp"); return }
        guard case .expire(let error)? = m.expired(now: 60_000) else { Issue.record("\(m.state)"); return }
        #expect(error.code == .unauthorized && error.seq == nil && error.message.contains("expired"))
        check(m.expired(now: 70_000) == nil, "said once")
        check(m.receive(Self.submit, now: 70_000) == .ignore)
        check(m.closed() == "s1")

        var f = Self.joinedWithToken(expires: 60_000)
        guard case .expire = f.receive(Self.submit, now: 60_000) else { Issue.record("a frame at exp"); return }
        check(f.closed() == "s1")

        var o = Self.machine()
        Self.joined(&o)
        check(o.expired(now: .max) == nil, "open mode has no token to expire")
    }

    @Test("an exp too far for the clock's milliseconds (1e300, a valid NumericDate) never expires and never traps")
    func farExpiry() {
        for seconds in [1e300, 9.3e15, Double(Int64.max), .infinity] {
            var m = Self.machine(needsToken: true)
            _ = m.receive(Self.helloWithToken, now: 0)
            _ = m.tokenChecked(.success(TokenGrant(role: .editor, expires: Date(timeIntervalSince1970: seconds))))
            _ = m.joined(session: "s1")
            check(m.expired(now: .max - 1) == nil, "\(seconds)")
        }
        #expect(TokenGrant(role: .viewer, expires: Date(timeIntervalSince1970: -1e300)).expiresMilliseconds == .min)
    }

    @Test("a hello sent back by room-full forgets the token it came with: the next hello's token counts")
    func expiryForgottenOnRefusal() {
        var m = Self.machine(needsToken: true)
        _ = m.receive(Self.helloWithToken, now: 0)
        _ = m.tokenChecked(.success(TokenGrant(role: .editor, expires: Date(timeIntervalSince1970: 1))))
        _ = m.refused(ProtocolError(.roomFull, "full"))
        check(m.expired(now: 5_000) == nil)
        guard case .authorize = m.receive(Self.helloWithToken, now: 5_000) else { Issue.record("\(m.state)"); return }
    }

    @Test("a frame over the size limit is too-large and leaves the connection open")
    func oversized() {
        var m = Self.machine()
        let got = Self.refusal(m.receiveOversized(bytes: 2_000_000, limit: 1_048_576, now: 0))
        #expect(got?.0 == .tooLarge && got?.close == false)
    }

    // MARK: the rate limit

    @Test("over the rate: submit / undo / redo get rate-limited with their seq; other frames once per burst")
    func rateLimit() {
        var m = Self.machine(opsPerSecond: 5)
        Self.joined(&m)  // the hello took one of the burst of 10
        for _ in 0..<9 { guard case .deliver = m.receive(Self.submit, now: 0) else { Issue.record("within the burst"); return } }
        let answered = Self.refusal(m.receive(Self.text(#"{"type":"undo","seq":9}"#), now: 0))
        #expect(answered?.0 == .rateLimited && answered?.seq == 9)
        // Frames that are not requests: the first drop of a run, then every tenth, is answered.
        var answers: [Int] = []
        for k in 2...21 {
            if Self.refusal(m.receive(Self.text(#"{"type":"ping","seq":1}"#), now: 10)) != nil { answers.append(k) }
        }
        #expect(answers == [10, 20])
    }

    @Test("a connection over its rate for more than a second is closed (1008); a quiet second forgives")
    func rateClose() {
        var m = Self.machine(opsPerSecond: 1)
        Self.joined(&m)
        _ = m.receive(Self.submit, now: 0)  // the burst of 2 is spent
        check(Self.refusal(m.receive(Self.submit, now: 0))?.0 == .rateLimited)
        check(Self.refusal(m.receive(Self.submit, now: 900))?.0 == .rateLimited, "not a token yet")
        check(m.receive(Self.submit, now: 1001) != .close(code: 1008, reason: "rate limit"))
        check(m.receive(Self.submit, now: 1002) == .close(code: 1008, reason: "rate limit"))
        check(m.receive(Self.submit, now: 1003) == .ignore)

        // A second hello with another protocol, the one fatal refusal a joined session can get.
        var p = Self.machine()
        Self.joined(&p)
        check(Self.refusal(p.receive(Self.text(#"{"type":"hello","protocol":2,"user":"ann"}"#), now: 0))?.close == true)
        check(p.closed() == "s1", "its session leaves the room too")
        check(m.closed() == "s1", "closed over its rate, the session still leaves the room when the close completes")
        check(m.closed() == nil)

        var q = Self.machine(opsPerSecond: 1)
        Self.joined(&q)
        _ = q.receive(Self.submit, now: 0)
        _ = q.receive(Self.submit, now: 0)  // refused
        guard case .deliver = q.receive(Self.submit, now: 2500) else { Issue.record("a token again"); return }
        guard case .deliver = q.receive(Self.submit, now: 3500) else { Issue.record("forgiven"); return }
    }
}
