import Foundation
import PeopleCore
import WebSocketTransport

/// One client of the run (service thread only).
final class LoadPeer: WebSocketClientDelegate {
    enum Role { case writer, verifier, receiver }

    let index: Int
    let room: Int
    let role: Role
    unowned let run: LoadRun
    /// Writers and verifiers keep the room with the core; receivers only check revision numbers.
    var sync: ClientSync?
    var connection: WebSocketConnection?
    /// Set just before connecting (the connect hands over to the service thread after it).
    nonisolated(unsafe) var connectStart: UInt64 = 0
    var joinedAt: UInt64?
    var lastRev = 0
    var receipts: [(rev: UInt32, at: UInt64)] = []
    var problems: [String] = []
    var requests = 0
    /// Requests the client dropped unsent (left empty by rebasing over others' revisions).
    var dropped = 0
    private var rng: BenchRandom
    private var flatOutUntil: UInt64?
    /// When each queued request was due, oldest first; a request takes one when it is first sent.
    private var dueTimes: [UInt64] = []
    private var dueOfSeq: [Int: UInt64] = [:]
    /// Per request in flight: its kind and when it left; and the answer times per kind (ms).
    private var sentOfSeq: [Int: (kind: Int, at: UInt64)] = [:]
    var answerMillis: [[Double]] = [[], [], []]
    private var lastSentSeq = 0

    init(index: Int, room: Int, role: Role, run: LoadRun, seed: UInt64) {
        self.index = index
        self.room = room
        self.role = role
        self.run = run
        self.rng = BenchRandom(seed: seed)
        if role != .receiver && run.plan.target == .hub { sync = ClientSync(user: "load-\(index)") }
    }

    func didConnect(_ connection: WebSocketConnection) {
        self.connection = connection
        if run.plan.target == .relay { return joined(rev: 0, at: DispatchTime.now().uptimeNanoseconds) }
        let hello: ClientMessage = sync?.connect(client: "peoplekeeper-bench/load")
            ?? .hello(.init(user: "load-\(index)", client: "peoplekeeper-bench/load"))
        connection.send(OutboundMessage(text: hello.json.bytes))
    }

    func didClose(_ connection: WebSocketConnection, error: String?) {
        if joinedAt == nil { run.markFailed() } else { problems.append("closed: \(error ?? "by the hub")") }
        self.connection = nil
    }

    func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
        let now = DispatchTime.now().uptimeNanoseconds
        if sync == nil { return receiveLight(message, at: now) }
        switch ServerMessage.decode(message) {
        case .failure(let error):
            problems.append("undecodable frame: \(error)")
        case .success(let decoded):
            let (send, _) = sync!.receive(decoded)
            self.send(send)
            track(decoded, at: now)
            reconcileDropped()
        }
    }

    /// Receivers: the type and revision by a scan (no parse), so a thousand fit in one process.
    private func receiveLight(_ message: [UInt8], at now: UInt64) {
        guard let type = Scan.string(of: "type", in: message) else { return }
        switch type {
        case "welcome":
            joined(rev: Scan.int(of: "rev", in: message) ?? 0, at: now)
        case "ops":
            guard let rev = Scan.int(of: "rev", in: message) else { return problems.append("ops without rev") }
            received(rev: rev, at: now, delivery: true)
        case "error":
            problems.append("error frame: \(String(decoding: message.prefix(200), as: UTF8.self))")
        default:
            break
        }
    }

    /// Writers and verifiers: order checks, and the due times of our own revisions.
    private func track(_ message: ServerMessage, at now: UInt64) {
        switch message {
        case .welcome(let w):
            joined(rev: w.rev, at: now)
        case .ops(let o):
            received(rev: o.rev, at: now, delivery: true)
        case .ack(let a):
            // A batch that changed nothing is acked at the current revision: no new revision.
            answered(seq: a.seq, rev: a.ops.isEmpty ? nil : a.rev, at: now)
            if a.ops.isEmpty, a.rev > lastRev { problems.append("a no-op ack at rev \(a.rev) ahead of \(lastRev)") }
        case .undone(let u), .redone(let u):
            answered(seq: u.seq, rev: u.ops.isEmpty ? nil : u.rev, at: now)
        case .error(let e):
            if let seq = e.seq { answered(seq: seq, rev: nil, at: now) }
            problems.append("error \(e.code.rawValue): \(e.message)")
        default:
            break
        }
    }

    private func joined(rev: Int, at now: UInt64) {
        guard joinedAt == nil else { return }
        joinedAt = now
        lastRev = rev
        run.startRevision[room] = min(run.startRevision[room] ?? rev, rev)
        run.saw(room: room, rev: rev)
        run.markJoined()
    }

    private func received(rev: Int, at now: UInt64, delivery: Bool) {
        if rev != lastRev + 1 { problems.append("got rev \(rev) after \(lastRev)") }
        lastRev = max(lastRev, rev)
        run.saw(room: room, rev: rev)
        if delivery { receipts.append((UInt32(truncatingIfNeeded: rev), now)) }
    }

    private func answered(seq: Int, rev: Int?, at now: UInt64) {
        if let sent = sentOfSeq.removeValue(forKey: seq) {
            answerMillis[sent.kind].append(Double(now - sent.at) / 1e6)
        }
        if let due = dueOfSeq.removeValue(forKey: seq), let rev { run.dueOfRevision[room][rev] = due }
        if let rev { received(rev: rev, at: now, delivery: false) }
        if let until = flatOutUntil {
            if now < until { actFlatOut(now) } else { stopActing() }
        }
    }

    /// What this writer still waits for (for the report of a run that timed out).
    var waiting: String {
        guard !dueOfSeq.isEmpty || (sync?.pendingCount ?? 0) > 0 else { return "" }
        return "client \(index) (room \(room)): seqs \(dueOfSeq.keys.sorted()) unanswered, \(sync?.pendingCount ?? 0) pending, "
            + "last sent seq \(lastSentSeq), at rev \(lastRev), connection \(connection == nil ? "closed" : "open"), "
            + "problems \(problems.prefix(3))"
    }

    // MARK: Writing

    func goFlatOut(until end: UInt64) {
        flatOutUntil = end
        actFlatOut(DispatchTime.now().uptimeNanoseconds)
    }

    func stopActing() {
        flatOutUntil = nil
    }

    /// The next request as soon as the last is answered (a draw that changes nothing is drawn again).
    private func actFlatOut(_ now: UInt64) {
        for _ in 0..<8 where sync?.pendingCount == 0 { act(due: now) }
    }

    /// Makes the next request of the mix (paced: `due` is its slot in the schedule).
    func act(due: UInt64) {
        if run.plan.target == .relay { return relay(due: due) }
        guard sync != nil, connection != nil else { return }
        let before = sync!.pendingCount
        let messages: [ClientMessage]
        let roll = rng.int(100)
        if roll < run.plan.mix.edit {
            // An edit that would change nothing (the value is already there) is drawn again.
            var made: [ClientMessage] = []
            for _ in 0..<8 where sync!.pendingCount == before {
                guard let edit = makeEdit(on: sync!.view) else { return }
                made = (try? sync!.edit([edit.diff], label: edit.label)) ?? []
            }
            messages = made
        } else if roll < run.plan.mix.edit + run.plan.mix.undo {
            messages = sync!.undo()
        } else {
            messages = sync!.redo()
        }
        if sync!.pendingCount > before {
            dueTimes.append(due)
            requests += 1
        }
        send(messages)
    }

    /// Against the relay: the next revision number of the room, in a frame of the shape and size of
    /// the hub's `ops` frame for a hair colour `set`.
    private func relay(due: UInt64) {
        guard let connection else { return }
        let rev = lastRev + 1
        let color = HairColor.allCases[rng.int(HairColor.allCases.count)].rawValue
        let time = Int64(Date().timeIntervalSince1970 * 1000)  // the hub's frames carry one too (issue 18)
        let frame = #"{"type":"ops","rev":\#(rev),"time":\#(time),"author":"load-\#(index)","kind":"edit","ops":[{"op":"set","tag":1,"field":"hairColor","value":"\#(color)"}],"label":"Change Hair Color"}"#
        lastRev = rev
        requests += 1
        run.saw(room: room, rev: rev)
        run.dueOfRevision[room][rev] = due
        connection.send(OutboundMessage(frame))
    }

    private func send(_ messages: [ClientMessage]) {
        let now = DispatchTime.now().uptimeNanoseconds
        for message in messages {
            switch message {
            case .submit(let s): firstSend(seq: s.seq); sentOfSeq[s.seq] = (0, now)
            case .undo(let u): firstSend(seq: u.seq); sentOfSeq[u.seq] = (1, now)
            case .redo(let u): firstSend(seq: u.seq); sentOfSeq[u.seq] = (2, now)
            default: break
            }
            connection?.send(OutboundMessage(text: message.json.bytes))
        }
    }

    /// ClientSync drops a queued batch that rebasing left empty (it could change nothing): forget its
    /// due time. Which one went is not known; the newest are forgotten, so the rest keep their own or
    /// an earlier due time (latency is over-, never under-stated).
    private func reconcileDropped() {
        guard let pending = sync?.pendingCount else { return }
        let unsent = pending - dueOfSeq.count
        if unsent < dueTimes.count {
            dropped += dueTimes.count - max(unsent, 0)
            dueTimes.removeLast(dueTimes.count - max(unsent, 0))
        }
    }

    private func firstSend(seq: Int) {
        guard seq > lastSentSeq else { return }
        lastSentSeq = seq
        let due = dueTimes.isEmpty ? DispatchTime.now().uptimeNanoseconds : dueTimes.removeFirst()
        // Flat out there is no schedule: the clock starts when the request leaves.
        dueOfSeq[seq] = flatOutUntil == nil ? due : DispatchTime.now().uptimeNanoseconds
    }

    private func makeEdit(on view: PeopleModel) -> (diff: Diff, label: String)? {
        let tags = view.tags
        guard !tags.isEmpty else { return nil }
        let tag = tags[rng.int(tags.count)]
        switch rng.int(8) {
        case 0: return (.set(tag, .hairColor(HairColor.allCases[rng.int(HairColor.allCases.count)])), "Change Hair Color")
        case 1: return (.set(tag, .eyeColor(EyeColor.allCases[rng.int(EyeColor.allCases.count)])), "Change Eye Color")
        case 2: return (.set(tag, .hairLength(HairLength.allCases[rng.int(HairLength.allCases.count)])), "Change Hair Length")
        case 3: return (.set(tag, .glasses(rng.int(2) == 0)), "Change Glasses")
        case 4: return (.facialHair(tag, FacialHairStyle.allCases[rng.int(FacialHairStyle.allCases.count)], present: rng.int(2) == 0),
                        "Change Facial Hair")
        case 5: return (.preference(tag, Topic.allCases[rng.int(Topic.allCases.count)], Opinion.allCases[rng.int(Opinion.allCases.count)]),
                        "Change Preference")
        case 6: return (.set(tag, .name("Person \(rng.int(1000))")), "Rename")
        default: return (.move(tag, to: rng.int(tags.count + 1)), "Move")
        }
    }
}
