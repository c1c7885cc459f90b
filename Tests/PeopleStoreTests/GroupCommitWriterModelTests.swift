import Foundation
import PeopleCore
@testable import PeopleStore
import PeopleTestSupport
import Synchronization
import Testing

/// `GroupCommitWriter` driven at random against a model of what its doc comments promise.
///
/// A seeded driver plays a hub: it appends consecutive journal entries to a few rooms, creates rooms
/// (snapshot, checkpoints and history handed over together), hands over later snapshots, deletes rooms,
/// breaks rooms from outside (`breakRooms`, a lost lease connection), reloads failed rooms (`reopen`),
/// checks the store (`recheck`), holds the writer inside a commit so work queues behind it, and closes.
/// The `commit` closure is a fake durable store: it keeps, per room, the journal entries it committed, in
/// order, its snapshots and its deletions, applies each transaction whole or not at all, and fails on
/// demand (a room's parts, a whole store that is down or locked, a later snapshot on a full disk, a
/// fence against a room's ended life, as a lease would). Every event gets a number on one timeline, and
/// the run is judged afterwards against the promises, each one beside the doc sentence it comes from.
///
/// Each piece of work carries its identity through the writer: an append's entries name it in their
/// `forgotten(session:)` records, a creation or deletion in its webhook notice's endpoint, checkpoints
/// in their revision, a later snapshot by its position (each run uses each pooled snapshot once).
///
/// The driver reacts to what the writer answered, as a hub does (it reloads a room it saw fail), so a
/// seed fixes its choices but the writer's timing can still steer the run; the judging is made so that
/// no timing can fail a run that keeps the promises (where "the last commit" or "queued" depends on a
/// race, that case is not judged). Replay one seed:
/// `GCW_MODEL_SEED=43 swift test --skip-build --filter GroupCommitWriterModelTests` (`GCW_MODEL_TRACE=1`
/// prints the driver's steps, `GCW_MODEL_STATS=1` how often each judged case came up).
@Suite("The group-commit writer, driven at random against a model of its documented contract")
struct GroupCommitWriterModelTests {
    static let seeds: [UInt64] = {
        if let one = ProcessInfo.processInfo.environment["GCW_MODEL_SEED"].flatMap(UInt64.init) { return [one] }
        return Array(0..<200)
    }()

    /// One case at a time, each on a thread of its own: a case waits for the writer's thread, and on
    /// the cooperative pool (one thread per core) its 200 cases held a pool thread through the first
    /// seconds of the run, while every other test's waits ran on.
    @Test("every promise of the writer's doc comments holds over a seeded random run", .serialized, arguments: seeds)
    func randomRun(seed: UInt64) async throws {
        let (run, problems) = try await blocking {
            let run = Run(seed: seed)
            return (run, run.play())
        }
        if ProcessInfo.processInfo.environment["GCW_MODEL_TRACE"] != nil {
            print("seed \(seed):\n" + run.trace.joined(separator: "\n"))
        }
        if ProcessInfo.processInfo.environment["GCW_MODEL_STATS"] != nil {
            print("stats " + run.stats.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        }
        #expect(problems.isEmpty, """
            seed \(seed) (replay: GCW_MODEL_SEED=\(seed)): \(problems.count) broken promise(s):
            \(problems.prefix(12).joined(separator: "\n"))
            last steps: \(run.trace.suffix(25).joined(separator: "; "))
            """)
    }

    /// Found by `randomRun` (about 20 seeds of 200 a run; 0, 13, 35, 43, 72 nearly always, 43 each time
    /// replayed alone), fixed in session 44: `isLaterSnapshot` says a later snapshot's failure "loses
    /// nothing and breaks nothing", the type doc that only "after a failure" of a room does it refuse
    /// appends; yet a later snapshot committed alone (or alone of its room in a batch) that failed for
    /// want of the store (`.unavailable`: locked, unreachable) broke its room, and the room's next
    /// append, once the store worked again, was refused until the room was reloaded.
    @Test("a later snapshot that fails alone for want of the store breaks no room: the room's next append is written once the store works again")
    func laterSnapshotUnavailableBreaksNoRoom() throws {
        let down = Mutex(true)
        let lost = DispatchSemaphore(value: 0)
        let writer = GroupCommitWriter(name: "test-writer", kind: "test", commit: { _ in
            if down.withLock({ $0 }) { throw StoreError(.unavailable, "database is locked") }
        }, onSnapshotFailure: { _, _ in lost.signal() })
        defer { writer.close() }
        writer.submit(.snapshot(room: "x", Self.laterSnapshots[0], notices: []))
        #expect(lost.wait(timeout: .now() + 10) == .success, "the snapshot's failure is reported")
        down.withLock { $0 = false }  // the lock was let go
        let outcome = Mutex<StoreError??>(nil)
        let done = DispatchSemaphore(value: 0)
        writer.submit(.append(room: "x", entries: [JournalEntry(position: 1, record: .forgotten(session: "s1"))], whenDurable: { error in
            outcome.withLock { $0 = error }
            done.signal()
        }))
        #expect(done.wait(timeout: .now() + 10) == .success)
        let got = outcome.withLock { $0 }
        #expect(got == .some(nil), "the append after a lost later snapshot was refused: \(String(describing: got))")
    }

    /// Later snapshots (position > 0, no notices): each run hands each over at most once, so its
    /// position names it.
    static let laterSnapshots: [RoomSnapshot] = {
        var driver = RoomDriver(name: "pool")
        var pool: [RoomSnapshot] = []
        for _ in 0..<150 {
            driver.play(rounds: 1)
            pool.append(driver.room.snapshot())
        }
        return pool
    }()

    /// A room's first snapshot (position 0: it creates the room).
    static let firstSnapshot = Room(name: "model").snapshot()

    @Test("the model's snapshots are what it takes them for: a first at position 0, later ones at distinct positions")
    func snapshotPool() throws {
        #expect(Suite.firstSnapshot.position == 0)
        let positions = Suite.laterSnapshots.map(\.position)
        #expect(positions.allSatisfy { $0 > 0 })
        #expect(Set(positions).count == positions.count)
        #expect(Suite.laterSnapshots.allSatisfy { WriterWork.snapshot(room: "x", $0, notices: []).isLaterSnapshot })
        #expect(!WriterWork.snapshot(room: "x", Suite.firstSnapshot, notices: []).isLaterSnapshot)
    }
}

private typealias Suite = GroupCommitWriterModelTests

extension GroupCommitWriterModelTests {
    enum PieceKind: Equatable, Sendable {
        case append(first: Int, count: Int)
        case creation  // a room's first snapshot, with a notice naming it
        case checkpoints
        case laterSnapshot
        case delete
    }

    /// One piece of work the driver handed over.
    struct Piece: Sendable {
        let id: Int
        let room: String
        /// The room's life when handed over: 0 at first, one more after each reopen or deletion.
        let life: Int
        let kind: PieceKind
        /// The id of the first piece of the group it was handed over in (its own id when alone).
        let group: Int
        /// When it was handed over (timeline), just before `submit` was called.
        let handed: Int
        let afterClose: Bool

        var isAppend: Bool { if case .append = kind { true } else { false } }
    }

    enum Key: Hashable, Sendable, CustomStringConvertible {
        case piece(Int)
        case probe
        case unknown(String)

        var description: String {
            switch self {
            case .piece(let id): "#\(id)"
            case .probe: "probe"
            case .unknown(let what): "?\(what)"
            }
        }
    }

    /// Why the fake store failed a commit.
    struct Cause: Sendable {
        var store = false                 // down or locked: nothing goes in
        var rooms: Set<String> = []       // rooms whose parts are bad (a collision, a bad record)
        var fenced: Set<String> = []      // "room@life": work of a life that ended (the lease fence)
        var snapshots = false             // a later snapshot that does not fit on the disk
    }

    /// One call of `commit`.
    struct Attempt: Sendable {
        let keys: [Key]
        let started: Int
        var ended: Int = .max
        var error: StoreError?
        var cause = Cause()
        var committed: Bool { error == nil && ended != .max }
    }

    struct Completion: Sendable {
        let at: Int
        let error: StoreError?
    }

    struct Faults: Sendable {
        var rooms: [String: StoreError.Kind] = [:]
        var storeDown: StoreError.Kind?
        var failNext = 0
        var snapshotsFail = false
        var delayMicros: UInt32 = 0
    }

    struct Outside: Sendable {
        let rooms: [String]
        let lives: [String: Int]
        let start: Int
        let end: Int
        /// The attempt the writer was held in throughout, if it was.
        let held: Int?
    }

    struct Deletion: Sendable {
        let piece: Int
        let start: Int
        let end: Int
        let found: Bool?
        let error: StoreError?
    }

    struct Recheck: Sendable {
        let start: Int
        let end: Int
        let error: StoreError?
    }

    struct Hold: Sendable {
        let attempt: Int
        var released: Int = .max
    }

    /// Everything the run saw, on one timeline (`tick`), and the fake durable store.
    struct State: Sendable {
        var time = 0
        var pieces: [Piece] = []
        var snapshotIDs: [Int: Int] = [:]
        var attempts: [Attempt] = []
        var inFlight: Int?
        var completions: [Int: [Completion]] = [:]
        var snapshotFailures: [(at: Int, room: String)] = []
        // The durable store.
        var journal: [String: [(position: Int, piece: Int)]] = [:]
        var created: Set<String> = []
        var snapshots: [String: [Int]] = [:]
        var committedIn: [Int: [Int]] = [:]
        var deleteFound: [Int: Bool] = [:]
        var problems: [String] = []
        // What the driver arranged.
        var faults = Faults()
        var fence: [String: Int] = [:]
        var holdPiece: Int?
        var holds: [Hold] = []
        var breaks: [Outside] = []
        var reopens: [Outside] = []
        var deletions: [Deletion] = []
        var rechecks: [Recheck] = []
        var close: (start: Int, end: Int)?

        mutating func tick() -> Int {
            time += 1
            return time
        }

        func key(of work: WriterWork) -> Key {
            let key: Key = switch work {
            case .append(_, let entries, _):
                if let first = entries.first, case .forgotten(let session) = first.record,
                   let id = Int(session.prefix { $0 != "/" }.dropFirst()) { .piece(id) } else { .unknown("append") }
            case .snapshot(_, let snapshot, let notices):
                if let notice = notices.first, let id = Int(notice.endpoint.dropFirst()) {
                    .piece(id)
                } else if let id = snapshotIDs[snapshot.position] { .piece(id) } else { .unknown("snapshot@\(snapshot.position)") }
            case .checkpoints(_, let kept): kept.first.map { Key.piece($0.revision) } ?? Key.unknown("checkpoints")
            case .delete(_, _, let notices, _): notices.first.flatMap { Int($0.endpoint.dropFirst()) }.map { Key.piece($0) } ?? Key.unknown("delete")
            case .probe: .probe
            }
            if case .piece(let id) = key, id >= pieces.count || pieces[id].room != work.room { return .unknown("\(key) in \(work.room)") }
            return key
        }

        /// Ends attempt `index`: decides whether it fails, and if not applies it whole.
        mutating func finish(_ index: Int, _ batch: [WriterWork]) -> StoreError? {
            let keys = attempts[index].keys
            var cause = Cause()
            var error: StoreError?
            if faults.failNext > 0 {
                faults.failNext -= 1
                cause.store = true
                error = StoreError(.unavailable, "injected: the store is locked (this commit)")
            } else if let kind = faults.storeDown {
                cause.store = true
                error = StoreError(kind, "injected: the store is down (\(kind))")
            }
            if keys != [.probe] {  // a probe writes nothing of a room's
                var roomError: StoreError?, fenceError: StoreError?, snapshotError: StoreError?
                for case .piece(let id) in keys {
                    let piece = pieces[id]
                    if let kind = faults.rooms[piece.room] {
                        cause.rooms.insert(piece.room)
                        roomError = roomError ?? StoreError(kind, "injected: \(piece.room)'s part is bad (\(kind))")
                    }
                    if piece.life < fence[piece.room, default: 0] {
                        cause.fenced.insert("\(piece.room)@\(piece.life)")
                        fenceError = fenceError ?? StoreError(.conflict, "injected: \(piece.room) life \(piece.life) is fenced off")
                    }
                    if piece.kind == .laterSnapshot, faults.snapshotsFail {
                        cause.snapshots = true
                        snapshotError = StoreError(.io, "injected: no room on the disk for a snapshot")
                    }
                }
                error = error ?? roomError ?? fenceError ?? snapshotError
            }
            let ended = tick()
            attempts[index].ended = ended
            attempts[index].error = error
            attempts[index].cause = cause
            inFlight = nil
            if error == nil { apply(index, batch) }
            return error
        }

        /// A transaction that worked: the fake store takes all of it, checking the journal has no gap.
        mutating func apply(_ index: Int, _ batch: [WriterWork]) {
            for (work, key) in zip(batch, attempts[index].keys) {
                guard case .piece(let id) = key else { continue }
                committedIn[id, default: []].append(index)
                let piece = pieces[id]
                switch work {
                case .append(let room, let entries, _):
                    let last = journal[room]?.last?.position ?? 0
                    if entries.first?.position != last + 1 {
                        problems.append("commit \(index) writes append #\(id) of \(room) (life \(piece.life)) at position "
                                        + "\(entries.first?.position ?? -1) after durable position \(last): a gap or overlap in the journal "
                                        + "[type doc: a later append must never land after a gap]")
                    }
                    journal[room, default: []] += entries.map { ($0.position, id) }
                case .snapshot(let room, _, _):
                    if piece.kind == .creation { created.insert(room) }
                    snapshots[room, default: []].append(id)
                case .delete(let room, let found, _, _):
                    let existed = created.contains(room) || !(journal[room] ?? []).isEmpty || !(snapshots[room] ?? []).isEmpty
                    found.found = existed
                    deleteFound[id] = existed
                    journal[room] = nil
                    snapshots[room] = nil
                    created.remove(room)
                case .checkpoints, .probe: break
                }
            }
        }
    }

    /// The fake store and the timeline, shared with the writer's thread.
    final class Model: Sendable {
        let state = Mutex(State())
        let gate = DispatchSemaphore(value: 0)

        func tick() -> Int { state.withLock { $0.tick() } }

        func commit(_ batch: [WriterWork]) throws {
            let (index, hold, delay) = state.withLock { s -> (Int, Bool, UInt32) in
                let keys = batch.map { s.key(of: $0) }
                let index = s.attempts.count
                if let other = s.inFlight {
                    s.problems.append("commit \(index) began while commit \(other) ran [type doc: group commit on a thread of its own]")
                }
                let started = s.tick()
                s.attempts.append(Attempt(keys: keys, started: started))
                s.inFlight = index
                var hold = false
                if let piece = s.holdPiece, keys.contains(.piece(piece)) {
                    s.holdPiece = nil
                    s.holds.append(Hold(attempt: index))
                    hold = true
                }
                return (index, hold, s.faults.delayMicros)
            }
            if hold { gate.wait() }
            if delay > 0 { usleep(delay) }
            if let error = state.withLock({ $0.finish(index, batch) }) { throw error }
        }

        func whenDurable(_ id: Int) -> @Sendable (StoreError?) -> Void {
            { [self] error in
                state.withLock { s in
                    let at = s.tick()
                    s.completions[id, default: []].append(Completion(at: at, error: error))
                }
            }
        }

        func snapshotFailed(_ room: String) {
            state.withLock { s in
                let at = s.tick()
                s.snapshotFailures.append((at: at, room: room))
            }
        }
    }

    static let leaseMessage = "model: the connection holding the leases was lost"

    /// Runs `body` on a thread of its own and waits at most `seconds` for it (a hang is a finding, not a
    /// stuck suite).
    static func within<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () -> T) -> T? {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }.start()
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return result.withLock { $0 }
    }
}

extension GroupCommitWriterModelTests {
    /// The driver: plays a hub against one writer, then judges what happened.
    final class Run {
        let seed: UInt64
        var random: SeededRandom
        let model: Model
        let rooms: [String]
        let maxBatch: Int
        let probeWrites: Bool
        let writer: GroupCommitWriter
        /// Each room's life, and its next journal position (nil: the room does not exist).
        var lives: [String: Int] = [:]
        var next: [String: Int] = [:]
        /// Rooms broken from outside (`breakRooms`) in their current life.
        var brokenOutside: Set<String> = []
        var appendsOf: [String: [Int]] = [:]
        var snapshotsUsed = 0
        var held = false
        var closed = false
        var problems: [String] = []
        var trace: [String] = []
        /// How often each judged situation came up (`GCW_MODEL_STATS`).
        var stats: [String: Int] = [:]

        init(seed: UInt64) {
            self.seed = seed
            var random = SeededRandom(seed: seed &* 0x2545_F491_4F6C_DD1D &+ 1)
            let rooms = (0..<Int.random(in: 2...5, using: &random)).map { "r\($0)" }
            let maxBatch = [1, 2, 3, 5, 4096].randomElement(using: &random)!
            let probeWrites = Bool.random(using: &random)
            let model = Model()
            (self.random, self.rooms, self.maxBatch, self.probeWrites, self.model) = (random, rooms, maxBatch, probeWrites, model)
            writer = GroupCommitWriter(name: "gcw-model", kind: "test", maxBatch: maxBatch, probeWrites: probeWrites,
                                       commit: { try model.commit($0) }, onSnapshotFailure: { room, _ in model.snapshotFailed(room) })
            for room in rooms { lives[room] = 0 }
            trace.append("rooms \(rooms.count), maxBatch \(maxBatch), probeWrites \(probeWrites)")
        }

        // MARK: Handing work over

        func register(_ room: String, _ kind: PieceKind, group: Int? = nil) -> Int {
            model.state.withLock { s in
                let id = s.pieces.count
                let handed = s.tick()
                s.pieces.append(Piece(id: id, room: room, life: lives[room]!, kind: kind, group: group ?? id,
                                      handed: handed, afterClose: closed))
                if kind == .laterSnapshot { s.snapshotIDs[Suite.laterSnapshots[snapshotsUsed - 1].position] = id }
                return id
            }
        }

        /// An append of `count` entries at the room's next positions.
        func append(_ room: String, count: Int, group: Int? = nil) -> WriterWork {
            let first = next[room] ?? 1
            let id = register(room, .append(first: first, count: count), group: group)
            next[room] = first + count
            appendsOf[room, default: []].append(id)
            let entries = (first..<first + count).map {
                JournalEntry(position: $0, record: .forgotten(session: "p\(id)/\(room)/\(lives[room]!)/\($0)"))
            }
            return .append(room: room, entries: entries, whenDurable: model.whenDurable(id))
        }

        func laterSnapshot(_ room: String, group: Int? = nil) -> WriterWork? {
            guard snapshotsUsed < Suite.laterSnapshots.count else { return nil }
            snapshotsUsed += 1
            _ = register(room, .laterSnapshot, group: group)
            return .snapshot(room: room, Suite.laterSnapshots[snapshotsUsed - 1], notices: [])
        }

        func nextID() -> Int { model.state.withLock { $0.pieces.count } }

        func notice(_ id: Int, _ room: String, _ event: String) -> WebhookNotice {
            WebhookNotice(endpoint: "p\(id)", room: room, event: event, time: Int64(id))
        }

        func create(_ room: String) {
            let group = nextID()
            let count = Int.random(in: 1...3, using: &random)
            let viaCreate = Bool.random(using: &random)
            let first = register(room, .creation, group: group)
            let snapshot = WriterWork.snapshot(room: room, Suite.firstSnapshot, notices: [notice(first, room, "room.created")])
            next[room] = 1
            if viaCreate {
                let kept = register(room, .checkpoints, group: group)
                guard case .append(_, let entries, let whenDurable) = append(room, count: count, group: group) else { return }
                trace.append("create \(room) #\(group)… (create)")
                writer.create(room: room, Suite.firstSnapshot, notices: [notice(first, room, "room.created")], entries: entries,
                              checkpoints: [Checkpoint(revision: kept, people: PeopleModel())], whenDurable: whenDurable)
            } else {
                let history = append(room, count: count, group: group)
                trace.append("create \(room) #\(group)… (together)")
                writer.submit(together: [snapshot, history])
            }
        }

        // MARK: What the driver knows

        /// Whether the room failed in its current life as far as a hub could know.
        func knownFailed(_ room: String) -> Bool {
            if brokenOutside.contains(room) { return true }
            let life = lives[room]!
            let ids = appendsOf[room] ?? []
            return model.state.withLock { s in
                ids.contains { id in
                    s.pieces[id].life == life && s.completions[id]?.contains { $0.error != nil && $0.error?.kind != .closed } == true
                }
            }
        }

        /// Waits until every append handed over has its completion and the writer looks idle.
        func settle() {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                let (pending, busy, count) = model.state.withLock { s in
                    (s.pieces.contains { $0.isAppend && !$0.afterClose && s.completions[$0.id] == nil }, s.inFlight != nil, s.attempts.count)
                }
                if !pending && !busy {
                    usleep(300)
                    if model.state.withLock({ $0.attempts.count == count && $0.inFlight == nil }) { return }
                    continue
                }
                usleep(100)
            }
            problems.append("appends handed over were not all answered within 10 s of the writer's being left alone")
        }

        // MARK: The run

        enum Action {
            case append, appendGroup, appendWithSnapshot, create, laterSnapshot, fault, breakRooms, reopen, delete, recheck, hold,
                 release, settle, pause
        }

        func play() -> [String] {
            let steps = Int.random(in: 40...110, using: &random)
            for _ in 0..<steps { step() }
            if held { release() }
            if Bool.random(using: &random) { settle() }
            closeWriter()
            if closed { afterClose() }
            return problems + judge()
        }

        func step() {
            // Faults wear off: a store comes back, a bad record is dealt with.
            model.state.withLock { s in
                if s.faults.storeDown != nil, Int.random(in: 0..<8, using: &random) == 0 { s.faults.storeDown = nil }
                for room in s.faults.rooms.keys where Int.random(in: 0..<10, using: &random) == 0 { s.faults.rooms[room] = nil }
            }
            let live = rooms.filter { next[$0] != nil }
            let absent = rooms.filter { next[$0] == nil }
            let failed = rooms.filter { knownFailed($0) }
            let weights: [(Action, Int)] = [
                (.append, live.isEmpty ? 0 : 30), (.appendGroup, live.isEmpty ? 0 : 5),
                (.appendWithSnapshot, live.isEmpty ? 0 : 4), (.create, absent.isEmpty ? 0 : 8),
                (.laterSnapshot, live.isEmpty ? 0 : 7), (.fault, 7), (.breakRooms, 2), (.reopen, failed.isEmpty ? 0 : 12),
                (.delete, held ? 0 : 2), (.recheck, held ? 0 : 3), (.hold, held || live.isEmpty ? 0 : 3),
                (.release, held ? 8 : 0), (.settle, held ? 0 : 3), (.pause, 3),
            ]
            var roll = Int.random(in: 0..<weights.map(\.1).reduce(0, +), using: &random)
            let action = weights.first { roll -= $0.1; return roll < 0 }!.0
            switch action {
            case .append:
                let room = live.randomElement(using: &random)!
                let work = append(room, count: Int.random(in: 1...3, using: &random))
                trace.append("append \(room)")
                writer.submit(work)
            case .appendGroup:
                let room = live.randomElement(using: &random)!
                let group = nextID()
                let works = (0..<Int.random(in: 2...3, using: &random)).map { _ in append(room, count: Int.random(in: 1...2, using: &random), group: group) }
                trace.append("together \(room) #\(group) ×\(works.count) appends")
                writer.submit(together: works)
            case .appendWithSnapshot:
                guard snapshotsUsed < Suite.laterSnapshots.count else { return }
                let room = live.randomElement(using: &random)!
                let group = nextID()
                let history = append(room, count: 1, group: group)
                guard let snapshot = laterSnapshot(room, group: group) else { return }
                trace.append("together \(room) #\(group) append + later snapshot")
                writer.submit(together: [history, snapshot])
            case .create:
                create(absent.randomElement(using: &random)!)
            case .laterSnapshot:
                let room = live.randomElement(using: &random)!
                guard let snapshot = laterSnapshot(room) else { return }
                trace.append("later snapshot \(room)")
                writer.submit(snapshot)
            case .fault:
                fault()
            case .breakRooms:
                let chosen = rooms.filter { _ in Int.random(in: 0..<3, using: &random) == 0 }
                let broken = chosen.isEmpty ? [rooms.randomElement(using: &random)!] : chosen
                let start = model.tick()
                writer.breakRooms(broken, StoreError(.unavailable, Suite.leaseMessage))
                let end = model.tick()
                let heldIn = held ? model.state.withLock { $0.holds.last?.attempt } : nil
                model.state.withLock { $0.breaks.append(Outside(rooms: broken, lives: lives, start: start, end: end, held: heldIn)) }
                brokenOutside.formUnion(broken)
                trace.append("breakRooms \(broken)\(held ? " (held)" : "")")
            case .reopen:
                let room = failed.randomElement(using: &random)!
                let life = lives[room]!
                let (start, base, exists) = model.state.withLock { s in
                    let start = s.tick()
                    s.fence[room] = life + 1  // the reload takes the room's lease: work of the life before is fenced off
                    let base = s.journal[room]?.last?.position ?? 0
                    return (start, base, s.created.contains(room) || base > 0)
                }
                writer.reopen(room: room)
                let end = model.tick()
                let heldIn = held ? model.state.withLock { $0.holds.last?.attempt } : nil
                model.state.withLock { $0.reopens.append(Outside(rooms: [room], lives: [room: life], start: start, end: end, held: heldIn)) }
                lives[room] = life + 1
                next[room] = exists ? base + 1 : nil
                brokenOutside.remove(room)
                trace.append("reopen \(room) → life \(life + 1) from \(exists ? "position \(base)" : "nothing")\(held ? " (held)" : "")")
            case .delete:
                let room = rooms.randomElement(using: &random)!
                delete(room)
            case .recheck:
                if Bool.random(using: &random) { settle() }
                recheck()
            case .hold:
                hold(live.randomElement(using: &random)!)
            case .release:
                release()
            case .settle:
                settle()
                trace.append("settle")
            case .pause:
                usleep(UInt32.random(in: 0...400, using: &random))
            }
        }

        func fault() {
            model.state.withLock { s in
                switch Int.random(in: 0..<6, using: &random) {
                case 0, 1:
                    let room = rooms.randomElement(using: &random)!
                    if s.faults.rooms[room] != nil {
                        s.faults.rooms[room] = nil
                    } else {
                        s.faults.rooms[room] = [StoreError.Kind.conflict, .corrupt, .io].randomElement(using: &random)!
                    }
                case 2: s.faults.storeDown = s.faults.storeDown == nil ? [StoreError.Kind.unavailable, .io].randomElement(using: &random)! : nil
                case 3: s.faults.failNext = Int.random(in: 1...2, using: &random)
                case 4: s.faults.snapshotsFail.toggle()
                default: s.faults.delayMicros = [0, 0, 50, 200, 600].randomElement(using: &random)!
                }
                let bad = s.faults.rooms.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }
                trace.append("faults: rooms \(bad), down \(s.faults.storeDown.map { "\($0)" } ?? "no"), next \(s.faults.failNext), "
                             + "snapshots \(s.faults.snapshotsFail ? "fail" : "ok"), delay \(s.faults.delayMicros) µs")
            }
        }

        func delete(_ room: String) {
            let id = register(room, .delete)
            let start = model.tick()
            let writer = writer
            let notices = [notice(id, room, "room.deleted")]
            let outcome: Result<Bool, StoreError>? = Suite.within(20) {
                do throws(StoreError) { return .success(try writer.delete(room: room, notices: notices)) } catch { return .failure(error) }
            }
            let end = model.tick()
            guard let outcome else {
                problems.append("delete(\(room)) did not return within 20 s")
                return
            }
            var found: Bool?, error: StoreError?
            switch outcome {
            case .success(let value): found = value
            case .failure(let value): error = value
            }
            model.state.withLock { $0.deletions.append(Deletion(piece: id, start: start, end: end, found: found, error: error)) }
            trace.append("delete \(room) #\(id): \(found.map { "found \($0)" } ?? "\(error!.kind)")")
            guard !closed else { return }
            if error == nil {
                // "A room that had failed takes appends again afterwards (it starts anew)."
                let life = lives[room]! + 1
                lives[room] = life
                model.state.withLock { $0.fence[room] = life }
                next[room] = nil
                brokenOutside.remove(room)
            }
        }

        func recheck() {
            let start = model.tick()
            let writer = writer
            let outcome: StoreError?? = Suite.within(20) {
                do throws(StoreError) { try writer.recheck(); return nil } catch { return error }
            }
            let end = model.tick()
            guard let outcome else {
                problems.append("recheck() did not return within 20 s")
                return
            }
            model.state.withLock { $0.rechecks.append(Recheck(start: start, end: end, error: outcome)) }
            trace.append("recheck: \(outcome.map { "\($0.kind)" } ?? "ok")")
        }

        /// Hands over an append of `room` and, if the writer takes it, keeps the writer inside that commit
        /// until `release`, so what is handed over meanwhile is certainly queued.
        func hold(_ room: String) {
            let work = append(room, count: 1)
            guard case .append = work else { return }
            let id = nextID() - 1
            model.state.withLock { $0.holdPiece = id }
            writer.submit(work)
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                let (isHeld, answered) = model.state.withLock { s in
                    (s.holds.last.map { s.attempts[$0.attempt].keys.contains(.piece(id)) } ?? false, s.completions[id] != nil)
                }
                if isHeld {
                    held = true
                    trace.append("hold in append #\(id) of \(room)")
                    return
                }
                if answered { break }
                usleep(100)
            }
            // Given up, unless the writer took the piece since the last look (then it waits at the gate).
            let tookIt = model.state.withLock { s -> Bool in
                if s.holds.last.map({ s.attempts[$0.attempt].keys.contains(.piece(id)) }) ?? false { return true }
                if s.holdPiece == id { s.holdPiece = nil }
                return false
            }
            if tookIt {
                held = true
                trace.append("hold in append #\(id) of \(room)")
                return
            }
            trace.append("hold: append #\(id) of \(room) was not taken")
        }

        func release() {
            model.state.withLock { s in
                let released = s.tick()
                s.holds[s.holds.count - 1].released = released
            }
            model.gate.signal()
            held = false
            trace.append("release")
        }

        func closeWriter() {
            let start = model.tick()
            closed = true
            let writer = writer
            guard Suite.within(20, { writer.close() }) != nil else {
                closed = false
                problems.append("close() did not return within 20 s")
                return
            }
            let end = model.tick()
            model.state.withLock { $0.close = (start, end) }
            trace.append("close")
        }

        /// Hands work over after close: every append refused with an error, nothing written.
        func afterClose() {
            let live = rooms.filter { next[$0] != nil }
            if let room = live.randomElement(using: &random) {
                writer.submit(append(room, count: 1))
                let group = nextID()
                writer.submit(together: [append(room, count: 1, group: group), append(room, count: 2, group: group)])
                if let snapshot = laterSnapshot(room) { writer.submit(snapshot) }
            }
            if let room = rooms.filter({ next[$0] == nil }).randomElement(using: &random) { create(room) }
            delete(rooms.randomElement(using: &random)!)
            recheck()
            // Refusals may be answered on the caller's thread or not at all: give them a moment.
            let deadline = Date().addingTimeInterval(0.2)
            while Date() < deadline, model.state.withLock({ s in s.pieces.contains { $0.afterClose && $0.isAppend && s.completions[$0.id] == nil } }) {
                usleep(200)
            }
        }

        // MARK: Judging

        func judge() -> [String] {
            let s = model.state.withLock { $0 }
            var problems = s.problems
            func describe(_ id: Int) -> String {
                let p = s.pieces[id]
                return "#\(id) (\(p.kind) of \(p.room), life \(p.life))"
            }
            func keys(_ a: Int) -> String { s.attempts[a].keys.map(\.description).joined(separator: " ") }
            let committedAt: [Int: [Int]] = s.committedIn
            let closeEnd = s.close?.end ?? .max

            // The commits the writer made, one after the other.
            for (index, attempt) in s.attempts.enumerated() {
                // WriterWork.probe: "Always committed alone."
                if attempt.keys.contains(.probe), attempt.keys.count != 1 {
                    problems.append("commit \(index) [\(keys(index))] holds a probe beside other work [WriterWork.probe: always committed alone]")
                }
                for case .unknown(let what) in attempt.keys {
                    problems.append("commit \(index) holds work the driver never handed over: \(what)")
                }
                let ids = attempt.keys.compactMap { if case .piece(let id) = $0 { id } else { nil } }
                // Type doc: "`commit` gets the work in order"; WriterWork: "in the order they were handed over".
                if ids != ids.sorted() || Set(ids).count != ids.count {
                    problems.append("commit \(index) [\(keys(index))] is not in the order handed over [type doc: commit gets the work in order]")
                }
                // init: "maxBatch: the most pieces of work in one transaction"; submit(together:): a batch never
                // ends between a group's pieces, so only a single group may exceed it.
                if attempt.keys.count > maxBatch, Set(ids.map { s.pieces[$0].group }).count > 1 {
                    problems.append("commit \(index) [\(keys(index))] holds \(attempt.keys.count) pieces from several groups, more than maxBatch \(maxBatch)")
                }
                // close: "Commits what was handed over, then stops the thread."
                if attempt.started > closeEnd {
                    problems.append("commit \(index) [\(keys(index))] began after close() returned [close: then stops the thread]")
                }
            }

            // Appends: answered once; nil only when written whole with no gap before; an error only when not written.
            for piece in s.pieces where piece.isAppend {
                let done = s.completions[piece.id] ?? []
                let written = committedAt[piece.id] ?? []
                if done.count != 1 {
                    problems.append("append \(describe(piece.id)) was answered \(done.count) times (\(done.map { $0.error.map { "\($0.kind)" } ?? "nil" }))")
                }
                if !piece.afterClose, let first = done.first, first.at > closeEnd {
                    problems.append("append \(describe(piece.id)) handed over before close() was answered after it returned [close: commits what was handed over, then stops]")
                }
                if written.count > 1 { problems.append("append \(describe(piece.id)) was written by \(written.count) commits \(written)") }
                guard let first = done.first else { continue }
                if let error = first.error {
                    if let commit = written.first {
                        problems.append("append \(describe(piece.id)) was told \(error.kind) (\(error.message)) but commit \(commit) [\(keys(commit))] wrote it")
                    }
                    problems += justify(piece, error, at: first.at, in: s)
                } else if let commit = written.first {
                    if s.attempts[commit].ended > first.at {
                        problems.append("append \(describe(piece.id)) was told durable before commit \(commit) ended")
                    }
                } else {
                    problems.append("append \(describe(piece.id)) was told durable but no commit wrote it [type doc: commit must write all of it in one transaction, or throw]")
                }
                // "Several pieces are refused as a whole when ... the store is closed" / "an append is refused then".
                if piece.afterClose, first.error == nil {
                    problems.append("append \(describe(piece.id)) handed over after close() was told durable [submit(together:): refused when the store is closed]")
                } else if piece.afterClose, let error = first.error, error.kind != .closed,
                          !knownBroken(piece.room, at: piece.handed, life: piece.life, in: s) {
                    problems.append("append \(describe(piece.id)) handed over after close() was refused with \(error.kind), not the store's being closed")
                }
                if !piece.afterClose, first.error?.kind == .closed {
                    problems.append("append \(describe(piece.id)) handed over before close() was refused as closed [close: commits what was handed over]")
                }
            }

            // Nothing handed over after close is written; no piece is written twice.
            for piece in s.pieces {
                let written = committedAt[piece.id] ?? []
                if piece.afterClose, let commit = written.first {
                    problems.append("\(describe(piece.id)) handed over after close() was written by commit \(commit)")
                }
                if !piece.isAppend, written.count > 1 { problems.append("\(describe(piece.id)) was written by \(written.count) commits \(written)") }
            }

            problems += judgeGroups(s)
            problems += judgeOrder(s)
            problems += judgeFailedRooms(s)
            problems += judgeOutside(s)
            problems += judgeDeletions(s)
            problems += judgeRechecks(s)
            count(s)
            return problems
        }

        /// Whether the room had failed (a failure a hub could know of) in `life` before `time`.
        /// ("refused ... when the room broke or the store is closed" allows either error; whether the writer
        /// was right to break the room is judged apart, so a lost snapshot counts here.)
        func knownBroken(_ room: String, at time: Int, life: Int, in s: State) -> Bool {
            s.breaks.contains { $0.rooms.contains(room) && $0.lives[room] == life && $0.start < time }
                || s.pieces.contains { p in
                    p.room == room && p.life == life && (s.completions[p.id]?.contains { $0.error != nil && $0.at < time } ?? false)
                }
                || s.deletions.contains { d in s.pieces[d.piece].room == room && s.pieces[d.piece].life == life && d.error != nil && d.end < time }
                || s.snapshotFailures.contains { $0.room == room && $0.at > lifeStart(room, life, in: s) && $0.at < time }
        }

        func count(_ s: State) {
            func add(_ key: String, _ n: Int = 1) { stats[key, default: 0] += n }
            add("commits", s.attempts.count)
            for a in s.attempts {
                let rooms = Set(a.keys.compactMap { if case .piece(let id) = $0 { s.pieces[id].room } else { nil } })
                if a.keys == [.probe] { add("probe commits") }
                if a.error != nil {
                    add("failed commits")
                    if rooms.count > 1 { add("failed multi-room commits") }
                    if a.cause.store { add("failed: store") }
                    if !a.cause.rooms.isEmpty { add("failed: room") }
                    if !a.cause.fenced.isEmpty { add("failed: fenced") }
                    if a.cause.snapshots && !a.cause.store && a.cause.rooms.isEmpty && a.cause.fenced.isEmpty { add("failed: only later snapshots") }
                }
            }
            for p in s.pieces where p.isAppend {
                guard let done = s.completions[p.id]?.first else { continue }
                if done.error == nil { add("appends durable") } else if done.error?.kind == .closed { add("appends refused closed") }
                else if done.error?.message == Suite.leaseMessage { add("appends lease error") } else { add("appends other error") }
            }
            let groups = Dictionary(grouping: s.pieces, by: \.group).filter { $0.value.count > 1 }
            add("groups", groups.count)
            add("groups written", groups.values.filter { $0.contains { !(s.committedIn[$0.id] ?? []).isEmpty } }.count)
            add("later snapshots written", s.pieces.filter { $0.kind == .laterSnapshot && !(s.committedIn[$0.id] ?? []).isEmpty }.count)
            add("deletions ok", s.deletions.filter { $0.error == nil }.count)
            add("deletions failed", s.deletions.filter { $0.error != nil }.count)
            add("reopens", s.reopens.count)
            add("breaks", s.breaks.count)
            add("holds", s.holds.count)
            add("rechecks", s.rechecks.count)
        }

        /// When the room's `life` began: the end of the reload or deletion that began it.
        func lifeStart(_ room: String, _ life: Int, in s: State) -> Int {
            guard life > 0 else { return 0 }
            let reloads = s.reopens.filter { $0.rooms == [room] && $0.lives[room] == life - 1 }.map(\.end)
            let deletions = s.deletions.filter { s.pieces[$0.piece].room == room && s.pieces[$0.piece].life == life - 1 && $0.error == nil }.map(\.end)
            return (reloads + deletions).max() ?? 0
        }

        /// An append told an error must have a reason a failing room, store or lease gives: type doc "A failed
        /// batch of several rooms is committed again room by room, so only the failing rooms fail";
        /// WriterWork.isLaterSnapshot "its failure loses nothing and breaks nothing"; lives "nor does its
        /// failure break the new life"; close "commits what was handed over".
        func justify(_ piece: Piece, _ error: StoreError, at time: Int, in s: State) -> [String] {
            if error.kind == .closed { return [] }  // judged by the caller: only after close()
            if error.message == Suite.leaseMessage {
                let ok = s.breaks.contains { $0.rooms.contains(piece.room) && $0.lives[piece.room] == piece.life && $0.start < time }
                return ok ? [] : ["append #\(piece.id) of \(piece.room) (life \(piece.life)) got the lease error though its room was "
                                  + "not broken from outside in that life [breakRooms; reopen]"]
            }
            // lives: "a batch taken before that [reopen] holds the earlier life's work, which is not written".
            if s.reopens.contains(where: { $0.rooms == [piece.room] && $0.lives[piece.room] == piece.life && $0.start < time }) {
                return []
            }
            let reasons = s.attempts.indices.filter { index in
                let a = s.attempts[index]
                guard a.error != nil, a.ended < time else { return false }
                let room = piece.room
                let coversRoom = a.cause.store || a.cause.rooms.contains(room) || a.cause.fenced.contains("\(room)@\(piece.life)")
                return coversRoom && a.keys.contains { key in
                    guard case .piece(let id) = key else { return false }
                    let other = s.pieces[id]
                    return other.room == room && other.life == piece.life && other.kind != .laterSnapshot
                }
            }
            if !reasons.isEmpty { return [] }
            let seen = s.attempts.indices.filter { s.attempts[$0].keys.contains(.piece(piece.id)) }
                .map { "commit \($0) \(s.attempts[$0].error.map { "failed \($0.kind) (\($0.message))" } ?? "worked")" }
            let between = s.attempts.indices.filter { s.attempts[$0].started > piece.handed && s.attempts[$0].started < time }.map { index in
                let a = s.attempts[index]
                let what = a.keys.map { key in if case .piece(let id) = key { "\(s.pieces[id].room).\(s.pieces[id].life)#\(id)" } else { key.description } }
                return "\(index)[\(what.joined(separator: " "))] \(a.error.map { "\($0.kind)" } ?? "ok")"
            }
            let roomFailures = s.attempts.indices.filter { index in
                let a = s.attempts[index]
                return a.error != nil && a.ended < time && a.keys.contains { key in
                    if case .piece(let id) = key { s.pieces[id].room == piece.room && s.pieces[id].life == piece.life } else { false }
                }
            }.map { index in
                let a = s.attempts[index]
                let what = a.keys.map { key in if case .piece(let id) = key { "\(s.pieces[id].room)#\(id):\(s.pieces[id].kind)" } else { key.description } }
                return "\(index)[\(what.joined(separator: " "))] \(a.error!.kind) (store \(a.cause.store), rooms \(a.cause.rooms.sorted()), "
                    + "fenced \(a.cause.fenced.sorted()), snapshots \(a.cause.snapshots))"
            }
            return ["append #\(piece.id) of \(piece.room) (life \(piece.life)), handed over at t\(piece.handed), was told \(error.kind) "
                    + "(\(error.message)) at t\(time) with no failure of its room in that life before it "
                    + "[type doc: only the failing rooms fail; isLaterSnapshot: breaks nothing; lives: nor does its failure break the new life]; "
                    + "its room's failed commits in that life: \(roomFailures); its own commits: \(seen.isEmpty ? "none" : seen.joined(separator: ", ")); "
                    + "commits begun meanwhile: \(between.joined(separator: ", "))"]
        }

        /// submit(together:): "to be written in one transaction: a batch never ends between them, so a crash
        /// leaves all or none of them". Reading: a later snapshot in a group may be left out when its room's
        /// part is committed again without it (commitIsolatingFailures, isLaterSnapshot); nothing else may.
        func judgeGroups(_ s: State) -> [String] {
            var problems: [String] = []
            let groups = Dictionary(grouping: s.pieces.filter { !$0.afterClose }, by: \.group).filter { $0.value.count > 1 }
            for (group, members) in groups.sorted(by: { $0.key < $1.key }) {
                let ids = members.map(\.id).sorted()
                let needed = members.filter { $0.kind != .laterSnapshot }.map(\.id).sorted()
                var writtenBy: Set<Int> = []
                for (index, attempt) in s.attempts.enumerated() {
                    let present = attempt.keys.enumerated().compactMap { offset, key -> (Int, Int)? in
                        if case .piece(let id) = key, ids.contains(id) { (offset, id) } else { nil }
                    }
                    guard !present.isEmpty else { continue }
                    let offsets = present.map { $0.0 }, got = present.map { $0.1 }
                    let contiguous = offsets.last! - offsets.first! == offsets.count - 1
                    if !contiguous || !Set(needed).isSubset(of: got) {
                        problems.append("group #\(group) \(ids) is split in commit \(index) [\(attempt.keys.map(\.description).joined(separator: " "))] "
                                        + "[submit(together:): a batch never ends between them]")
                    }
                    if attempt.committed { writtenBy.insert(index) }
                }
                if writtenBy.count > 1 {
                    problems.append("group #\(group) \(ids) was written by several commits \(writtenBy.sorted()) [submit(together:): one transaction]")
                }
                let writtenNeeded = needed.filter { !(s.committedIn[$0] ?? []).isEmpty }
                if !writtenNeeded.isEmpty, writtenNeeded != needed {
                    problems.append("group #\(group): only \(writtenNeeded) of \(needed) were written [submit(together:): all or none of them]")
                }
            }
            return problems
        }

        /// Per room, what is written is in the order handed over (WriterWork: "in the order they were handed
        /// over"; type doc: "`commit` gets the work in order").
        func judgeOrder(_ s: State) -> [String] {
            var problems: [String] = []
            var last: [String: Int] = [:]
            for (index, attempt) in s.attempts.enumerated() where attempt.committed {
                for case .piece(let id) in attempt.keys {
                    let room = s.pieces[id].room
                    if let before = last[room], before > id {
                        problems.append("commit \(index) writes #\(id) of \(room) after #\(before), handed over later")
                    }
                    last[room] = max(last[room] ?? -1, id)
                }
            }
            return problems
        }

        /// Type doc: "After a failure a room refuses further appends and snapshots until `reopen(room:)`: a
        /// later append must never land after a gap." Once the writer has told one of a room's appends that a
        /// commit failed (not its lease, not the store's being closed), no commit it begins afterwards holds
        /// that room's appends, snapshots or checkpoints of the same life.
        func judgeFailedRooms(_ s: State) -> [String] {
            var problems: [String] = []
            for piece in s.pieces where piece.isAppend {
                guard let done = s.completions[piece.id]?.first, let error = done.error,
                      error.kind != .closed, error.message != Suite.leaseMessage else { continue }
                for (index, attempt) in s.attempts.enumerated() where attempt.started > done.at {
                    let same = attempt.keys.compactMap { key -> Int? in
                        guard case .piece(let id) = key else { return nil }
                        let other = s.pieces[id]
                        return other.room == piece.room && other.life == piece.life && other.kind != .delete ? id : nil
                    }
                    if let id = same.first {
                        problems.append("commit \(index) holds #\(id) of \(piece.room) (life \(piece.life)) though append #\(piece.id) of that life "
                                        + "had been told \(error.kind) before it began "
                                        + "[type doc: after a failure a room refuses further appends and snapshots until reopen]")
                        break
                    }
                }
            }
            return problems
        }

        /// breakRooms: "what is queued for them is failed, not written, and they take nothing more until
        /// reloaded"; reopen: "What its failed life still had queued is failed first, not written"; lives: "a
        /// batch taken before that holds the earlier life's work, which is not written". Judged where the
        /// driver held the writer inside a commit throughout, so it knows what was queued and what was in the
        /// commit. Reading: "not written" covers a commit of the room's part begun afterwards, retries of the
        /// batch that was in the commit included.
        func judgeOutside(_ s: State) -> [String] {
            var problems: [String] = []
            let events = s.breaks.map { ("breakRooms", $0) } + s.reopens.map { ("reopen", $0) }
            for (what, event) in events {
                guard let held = event.held, let hold = s.holds.first(where: { $0.attempt == held }) else { continue }
                stats["\(what) while held", default: 0] += 1
                let inCommit = Set(s.attempts[held].keys)
                for room in event.rooms {
                    let life = event.lives[room]!
                    let before = s.pieces.filter { $0.room == room && $0.life == life && $0.handed < event.start && $0.kind != .delete }
                    for piece in before {
                        let queued = !inCommit.contains(.piece(piece.id))
                        if let index = s.attempts.indices.first(where: { s.attempts[$0].started > event.end && s.attempts[$0].keys.contains(.piece(piece.id)) }) {
                            problems.append("\(what)(\(room)) while the writer was held in commit \(held): #\(piece.id) (\(piece.kind), "
                                            + "\(queued ? "queued" : "in that commit")) was in commit \(index) begun afterwards [\(what): not written]")
                        }
                        guard queued, piece.isAppend else { continue }
                        let done = s.completions[piece.id]?.first
                        if done.map({ $0.at > event.start }) ?? true {
                            if done?.error == nil || done!.at > hold.released {
                                let how = done == nil ? "never answered" : done!.error == nil ? "told durable" : "failed only after the writer was let go"
                                problems.append("\(what)(\(room)) while the writer was held: queued append #\(piece.id) was \(how) "
                                                + "[\(what): what is queued is failed]")
                            }
                        }
                    }
                }
            }
            return problems
        }

        /// delete(room:): "Deletes `room` after everything handed over before, and waits for the commit";
        /// WriterWork.delete: "the commit sets `found` to whether it existed"; submit: "a deletion ... [is
        /// refused] only when the store is closed".
        func judgeDeletions(_ s: State) -> [String] {
            var problems: [String] = []
            for deletion in s.deletions {
                let piece = s.pieces[deletion.piece]
                let written = s.committedIn[deletion.piece] ?? []
                if piece.afterClose {
                    if deletion.error?.kind != .closed {
                        problems.append("delete #\(piece.id) after close() gave \(deletion.error.map { "\($0.kind)" } ?? "found \(deletion.found!)"), not the store's being closed")
                    }
                    continue
                }
                if let found = deletion.found {
                    guard let commit = written.first else {
                        problems.append("delete #\(piece.id) of \(piece.room) returned without a commit that deleted the room")
                        continue
                    }
                    if s.attempts[commit].ended > deletion.end { problems.append("delete #\(piece.id) returned before its commit \(commit) ended") }
                    if s.deleteFound[piece.id] != found {
                        problems.append("delete #\(piece.id) of \(piece.room) returned found \(found) but its commit found \(s.deleteFound[piece.id].map { "\($0)" } ?? "nothing")")
                    }
                    for (index, attempt) in s.attempts.enumerated() where attempt.started > deletion.end {
                        if let early = attempt.keys.first(where: { if case .piece(let id) = $0 { s.pieces[id].handed < deletion.start } else { false } }) {
                            problems.append("commit \(index) begun after delete #\(piece.id) returned holds \(early), handed over before the "
                                            + "deletion [delete: after everything handed over before]")
                        }
                    }
                } else if let commit = written.first {
                    problems.append("delete #\(piece.id) of \(piece.room) threw \(deletion.error!.kind) but commit \(commit) deleted the room")
                }
            }
            return problems
        }

        /// recheck: "throws the last commit's failure, unless that failed for want of the store
        /// (`.unavailable`) or of its disk (`.io` ...; for a store whose probe writes, `probeWrites`), not for
        /// what it wrote, and a probe commit works now"; lastFailure: "The error of the last commit, unless one
        /// has succeeded since"; probe(): "after everything handed over before, and waits for it".
        /// Judged only when no other commit ran during the call and the writer had answered the last batch
        /// before it (else "the last commit" is a race). Readings:
        /// "the last commit" is the last batch, with its room-by-room retries: judged only when they all
        /// worked, or all failed with one kind; a `.conflict` is not judged (the doc says "not for what it
        /// wrote", GroupCommitWriterTests.recheckAfterAFailure says a writing probe rechecks it); nor is a
        /// failure caused only by later snapshots (isLaterSnapshot: "breaks nothing").
        func judgeRechecks(_ s: State) -> [String] {
            var problems: [String] = []
            for recheck in s.rechecks {
                let during = s.attempts.indices.filter { s.attempts[$0].started < recheck.end && s.attempts[$0].ended > recheck.start }
                let probes = during.filter { s.attempts[$0].keys == [.probe] }
                if !probes.isEmpty {
                    for (index, attempt) in s.attempts.enumerated() where attempt.started > recheck.end {
                        if let early = attempt.keys.first(where: { if case .piece(let id) = $0 { s.pieces[id].handed < recheck.start } else { false } }) {
                            problems.append("commit \(index) begun after recheck() returned holds \(early), handed over before it [probe: after everything handed over before]")
                        }
                    }
                }
                guard during.count == probes.count, probes.count <= 1, recheck.start < (s.close?.start ?? .max) else { continue }
                let before = s.attempts.filter { $0.ended < recheck.start }
                // The last batch: its first commit and the retries of its parts (each a part of the first).
                var first = before.count - 1
                for candidate in stride(from: before.count - 2, through: 0, by: -1)
                where before[(candidate + 1)...].allSatisfy({ Set($0.keys).isSubset(of: before[candidate].keys) }) {
                    first = candidate
                }
                let batch = first >= 0 ? Array(before[first...]) : []
                // The writer notes a batch's outcome after `commit` returns, before it answers the batch's
                // work: judged only when it had answered the last batch before the recheck began (one of its
                // appends, or the earlier recheck whose probe it was).
                let answered = batch.isEmpty || batch.contains { attempt in
                    attempt.keys.contains { key in
                        guard case .piece(let id) = key, s.pieces[id].isAppend else { return false }
                        return s.completions[id]?.first.map { $0.at < recheck.start } ?? false
                    }
                } || (batch.last!.keys == [.probe] && s.rechecks.contains { $0.end < recheck.start && $0.start < batch.last!.started && batch.last!.ended < $0.end })
                guard answered else { continue }
                stats["recheck judged", default: 0] += 1
                let probe = probes.first.map { s.attempts[$0] }
                let state: String
                if batch.allSatisfy(\.committed) {
                    state = "the last commit worked"
                    stats["recheck judged: worked", default: 0] += 1
                    if let error = recheck.error {
                        problems.append("recheck() threw \(error.kind) (\(error.message)) though \(state) [recheck: throws the last commit's failure]")
                    }
                } else if let kind = batch.first?.error?.kind, batch.allSatisfy({ $0.error?.kind == kind }),
                          !batch.allSatisfy({ $0.cause.snapshots && !$0.cause.store && $0.cause.rooms.isEmpty && $0.cause.fenced.isEmpty }) {
                    state = "the last commit failed \(kind)"
                    stats["recheck judged: failed \(kind)", default: 0] += 1
                    if kind == .unavailable || (kind == .io && probeWrites) {
                        guard let probe else {
                            problems.append("recheck() made no probe though \(state) (probeWrites \(probeWrites)) [recheck: unless ... a probe commit works now]")
                            continue
                        }
                        if (probe.error == nil) != (recheck.error == nil) {
                            problems.append("recheck() \(recheck.error.map { "threw \($0.kind)" } ?? "passed") though \(state) and its probe "
                                            + "\(probe.error.map { "failed \($0.kind)" } ?? "worked")")
                        }
                    } else if kind == .corrupt || kind == .io {
                        if recheck.error?.kind != kind {
                            problems.append("recheck() \(recheck.error.map { "threw \($0.kind)" } ?? "passed") though \(state) "
                                            + "(probeWrites \(probeWrites)) [recheck: throws the last commit's failure]")
                        }
                    }
                }
            }
            return problems
        }
    }
}
