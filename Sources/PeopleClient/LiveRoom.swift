import Foundation
import PeopleCore
import WebSocketTransport

/// A room kept live for a screen: the client state machine (`ClientSync`: optimistic edits, one
/// request in flight, rebasing) over a connection that comes back by itself.
///
/// Everything runs on `queue`: call every method there, and `onUpdate` is called there after each
/// change. While the hub is unreachable, edits, undos and redos are taken and queued; they are sent,
/// rebased, when the connection is back (with `resume` and `since`, so the session and its seq
/// replies carry over). Reconnects back off from 0.25 s to 5 s.
///
/// It does not wait on a dead link: an attempt the hub does not answer (the WebSocket upgrade) within
/// `connectSeconds` is given up, and on an open connection a `ping` goes after `heartbeatSeconds` of
/// silence; when the next spell is silent too, the connection is given up (the web page's heartbeat).
/// Either way the link goes offline, says why, and a new attempt follows (a network that stalls
/// showed `● online` for minutes, or stayed `◌ connecting` for good).
///
/// It also drives a `HistoryReader` (the timeline and who wrote what of the selected person): the
/// reader's questions are asked over the connection as `log` / `blame`, its answers handed back by seq.
public final class LiveRoom: @unchecked Sendable {
    public enum Link: Hashable, Sendable {
        case connecting
        case online
        /// Not connected; the next attempt is at `retryAt`.
        case offline(retryAt: Date, why: Loss)
        /// The hub refused this user (`unauthorized`): no more attempts.
        case refused(String)
    }

    /// Why the link went down. A hub that closed the connection itself is up (an operator's drill saw
    /// "the hub is unreachable (closed by the hub (1011))" from a hub refusing writes), so the two are
    /// told apart here, once, rather than by the screen reading the words back.
    public enum Loss: Hashable, Sendable {
        /// The hub closed the connection, with its code and reason (a drain: 1001 `hub shutting
        /// down`; a commit it could not make: 1011 `store failed`).
        case closedByHub(code: UInt16, reason: String)
        /// The hub could not be reached, the connection broke, or the hub stopped answering: the
        /// transport's words, or the heartbeat's.
        case unreachable(String)

        /// What happened, in a few words: "the hub closed the connection", "the hub is unreachable".
        public var headline: String {
            switch self {
            case .closedByHub: "the hub closed the connection"
            case .unreachable: "the hub is unreachable"
            }
        }

        /// The headline with its detail: "the hub closed the connection (1011 store failed)", "the
        /// hub is unreachable (connection refused)".
        public var sentence: String {
            switch self {
            case .closedByHub(let code, let reason): "\(headline) (\(code)\(reason.isEmpty ? "" : " " + reason))"
            case .unreachable(let why): "\(headline) (\(why))"
            }
        }
    }

    /// Something a screen should tell the user about once.
    public enum Notice: Sendable {
        /// Parts of this user's request the hub skipped or turned into no-ops, with the people as they
        /// were before (to name them); `redo`: the request was a redo (a person it would delete was
        /// brought back by the user's undo, not added by them).
        case skipped([SkipReport], people: PeopleModel, redo: Bool = false)
        /// A teammate's revision, with the people as they were before it (to name them) and after it,
        /// as the hub has them: this user's changes not yet confirmed are in neither (a teammate's
        /// rename is not said with this user's own queued name).
        case remote(Revision.Summary, people: PeopleModel, after: PeopleModel)
        case error(ProtocolError)
        /// The connection was lost (or could not be made), and why; said once until it is back. What
        /// to show meanwhile is `link`'s to say: it is the one account of the connection.
        case offline(Loss)
        /// The requests queued while the hub was unreachable (this many) have all been answered.
        case sent(Int)
        /// An undo pressed for a queued edit (`label`) went with it, unsent: the edit changed nothing or
        /// no longer applied, for these reasons (sentences: the hub's reports, or what the client saw).
        case undoDropped(label: String?, why: [String])
        /// This user's undo (or redo) made a revision, undoing (redoing) the step `label`: with
        /// `undo.cascade`, an undo whose newest step had nothing left goes on to the one before, so
        /// the step done may not be the one offered (a `skipped` notice of the same answer follows).
        case stepDone(redo: Bool, label: String?)
        /// This user's undo (or redo) found nothing of theirs to take back (an empty stack, or nothing
        /// on that person for a scoped one): no revision, no step named, nothing skipped.
        case nothingToDo(redo: Bool)
        /// The hub answered this user's restore to `rev`: `made` is the revision it made, nil when the
        /// room already looked as it did at `rev`.
        case restored(rev: Int, made: Int?)
        /// The hub's room has another history than the one this client had (restored from an older
        /// backup, or a hub restarted without its data): the screen shows the hub's state plus the
        /// `kept` queued requests that still apply; `notSent` others went unsent (edits that no
        /// longer apply, undos, redos or restores of the old history's steps). `lost`: this user's
        /// changes the hub had acknowledged and no longer has, oldest first; `perhapsMore`: which of
        /// them went cannot be told (the hub's history is as long as the one this client had).
        case reset(kept: Int, notSent: Int, lost: [ServerMessage.LogEntry] = [], perhapsMore: Bool = false)
        /// The hub's rows about people gone that `nameGone(_:)` asked for (their last names are in
        /// them: `lastNamings`).
        case named([ServerMessage.LogEntry])
    }

    public private(set) var sync: ClientSync
    /// The timeline and the watched person's writers, as far as the hub has answered.
    public private(set) var reader = HistoryReader()
    /// The reader's questions out on this connection, by seq.
    private var questions: [Int: HistoryReader.Question] = [:]
    /// `nameGone`'s questions out on this connection, by seq: whom each asks about.
    private var namings: [Int: Tag] = [:]
    public private(set) var link: Link = .connecting
    /// Seconds an attempt may take to be answered before it is given up and tried again.
    public static let connectSeconds = 10.0
    /// Seconds of silence after which a `ping` checks the connection; a second silent spell ends it
    /// (`open --heartbeat`; 20 by default, as the web page's).
    public static let defaultHeartbeatSeconds = 20.0
    private let heartbeatSeconds: Double
    /// Something came from the hub since the last heartbeat (the connection's open counts).
    private var heard = false
    public let room: String
    private var url: String
    /// The address the room was opened with: where it goes back to when a node it was redirected to
    /// cannot be reached (that node died: the next node a hello reaches takes its rooms).
    private let home: String
    /// The address of the connection under way, and whether it was welcomed there.
    private var connectedURL: String?
    private var welcomedHere = false
    private let queue: DispatchQueue
    private let client: WebSocketClient
    private var connection: Connection?
    private var generation = 0
    private var backoff = 0.25
    /// Redirects followed since the last welcome: the next one goes at once, and is no loss of the
    /// link (up to `maxRedirects` in a row; past them, as any lost connection).
    private var redirects = 0
    private var redirecting = false
    static let maxRedirects = 3
    private var stopped = false
    /// Why the hub refused this user, once it has (then it is not asked again until `renew(token:)`).
    private var refusal: String?
    /// The hub refused a token after this room had been open (it expired: the hub ends a session at
    /// its token's `exp`): `renew(token:)` carries the session on, with what was not sent.
    public private(set) var tokenEnded = false
    public var onUpdate: (([Notice]) -> Void)?
    /// What this user is looking at (sent with each new connection too).
    private var viewing: ClientMessage.PresenceUpdate?
    /// How many requests were waiting when the connection came back; `.sent` says so when they are done.
    private var resending = 0
    /// Whether requests queued while the hub was unreachable are still being answered (`.sent` comes
    /// with the last answer): a screen keeps what the earlier answers said to say it then.
    public var isResending: Bool { resending > 0 }
    /// How far the hub's clock is from this one (a ping after each welcome and each quiet spell).
    public private(set) var clock = HubClock()
    /// This computer's clock (milliseconds since the epoch; tests give their own).
    private let localClock: @Sendable () -> Int64

    /// The hub's clock now: the time to measure a revision's `time` against ("2 min ago").
    public var hubNow: Date { clock.hubDate(local: localClock()) }

    private var token: String?

    /// - Parameter caFile: certificates to trust for `wss://` instead of the system's.
    public init(base: String, room: String, user: String, token: String? = nil, caFile: String? = nil,
                heartbeatSeconds: Double = LiveRoom.defaultHeartbeatSeconds, queue: DispatchQueue,
                localClock: @escaping @Sendable () -> Int64 = HubClock.localMilliseconds) throws {
        self.token = token
        self.localClock = localClock
        self.heartbeatSeconds = heartbeatSeconds
        self.room = room
        self.url = HubConnection.roomURL(base: base, room: room)
        self.home = url
        self.queue = queue
        self.sync = ClientSync(user: user)
        // The attempt's own limit is `connectSeconds` (below, with its words); lws's (5 s by default,
        // per phase) would end it first.
        self.client = try WebSocketClient(caFile: caFile, handshakeSeconds: Int(Self.connectSeconds) + 5)
    }

    /// Starts connecting (queue only).
    public func start() { connect() }

    /// After the hub refused the token (`link` is `.refused`): connects again with `token`, resuming the
    /// session; what the hub had not acknowledged is sent again. Nothing while the link is not refused.
    public func renew(token: String) {
        guard case .refused = link else { return }
        self.token = token
        refusal = nil
        tokenEnded = false
        backoff = 0.25
        connect()
    }

    /// Closes the connection and stops reconnecting (call it off `queue`).
    public func stop() async {
        queue.sync {
            stopped = true
            connection?.close(via: client)
        }
        await client.shutdown()
    }

    // MARK: Actions (queue only)

    public func edit(_ diffs: [Diff], label: String, coalesce: String? = nil) throws(InvalidOp) {
        send(try sync.edit(diffs, label: label, coalesce: coalesce))
        onUpdate?([])
    }

    public func undo(scope: Tag? = nil) {
        send(sync.undo(scope: scope))
        onUpdate?([])
    }

    public func redo(scope: Tag? = nil) {
        send(sync.redo(scope: scope))
        onUpdate?([])
    }

    /// Undoes this user's entry `id` (selective undo), wherever it is on the stack.
    public func undo(entry id: Int) {
        send(sync.undo(entry: id))
        onUpdate?([])
    }

    /// Makes the room what it was right after revision `rev`, as one revision (and one undo step).
    public func restore(to rev: Int) {
        send(sync.restore(to: rev))
        onUpdate?([])
    }

    // MARK: History (queue only)

    /// Shows the timeline, the room's or one `person`'s: its newest page is asked for (`reader.rows`).
    public func openTimeline(person: Tag? = nil) { ask(reader.open(person: person)) }

    public func closeTimeline() { reader.close() }

    /// The reader is near the end of the timeline's rows: the next older page.
    public func loadOlder() { ask(reader.wantOlder()) }

    /// Who last wrote each part of this person is wanted (`reader.attribution`), kept up to date.
    public func attribute(_ tag: Tag?) {
        ask(reader.watch(tag, present: tag.map { sync.confirmed[$0] != nil } ?? false))
    }

    /// Asks the hub for the last names of people no longer in the room whom this client never saw
    /// (a skip report about someone removed before it opened: "Zed was removed by bob", not "tag
    /// 8104 …"): the newest revisions that named each, whose removal says the name they had
    /// (`removed`). The answers come as `.named`; offline nothing is asked, and a connection lost
    /// loses the questions (the report keeps the tag). At most `namingMost` people are asked about.
    public func nameGone(_ tags: some Sequence<Tag>) {
        for tag in Set(tags).sorted().prefix(Self.namingMost) where !namings.values.contains(tag) {
            guard link == .online, let (seq, message) = sync.ask({ seq in
                .log(.init(seq: seq, before: nil, limit: Self.namingRows, tag: tag))
            }) else { return }
            namings[seq] = tag
            send([message])
        }
    }

    /// Rows asked for per person by `nameGone`: the newest is their removal, which says their name
    /// (`removed`); the few before it name them for a hub older than that addition.
    static let namingRows = 20
    /// People asked about per call at most: each question is a frame, counted against the hub's rate
    /// limit (a restore can remove hundreds of people one report names).
    static let namingMost = 5

    private func ask(_ wanted: [HistoryReader.Question]) {
        for question in wanted {
            // Not connected: the reader asks again when the connection is back (`reconnected`).
            guard link == .online, let (seq, message) = sync.ask({ seq in
                switch question {
                case .log(let before, let limit, let tag): .log(.init(seq: seq, before: before, limit: limit, tag: tag))
                case .blame(let tag): .blame(.init(seq: seq, tag: tag))
                }
            }) else { continue }
            questions[seq] = question
            send([message])
        }
    }

    public func allocateTag() -> Tag? {
        let tag = sync.allocateTag()
        if sync.tagsLeft < 10, link == .online { send([.tags]) }
        return tag
    }

    /// Tells the others what this user is looking at.
    public func view(tag: Tag?, field: String?) {
        let update = ClientMessage.PresenceUpdate(viewing: tag, field: field)
        guard update != viewing else { return }
        viewing = update
        if link == .online { send([.presence(update)]) }
    }

    // MARK: The connection

    private func connect() {
        guard !stopped else { return }
        generation += 1
        link = .connecting
        clock.connectionLost()
        let hello = sync.connect(client: "peoplekeeper-tui/1", token: token)
        var first = [hello]
        if let viewing { first.append(.presence(viewing)) }
        let connection = Connection(room: self, generation: generation, first: first)
        self.connection = connection
        (connectedURL, welcomedHere) = (url, false)
        do { try client.connect(url: url, delegate: connection) } catch {
            return lost(generation: generation, why: .unreachable("\(error)"))
        }
        let attempt = generation
        onUpdate?([])  // the screen says "connecting" (not "retry in 1 s") while it is
        queue.asyncAfter(deadline: .now() + Self.connectSeconds) { [weak self] in
            guard let self, self.generation == attempt, let connection = self.connection, !connection.isOpen else { return }
            self.giveUp(generation: attempt, why: .unreachable("the hub did not answer within \(Int(Self.connectSeconds)) s"))
        }
    }

    /// The connection's upgrade was answered: from now on, silence is watched.
    fileprivate func opened(generation: Int) {
        guard generation == self.generation, !stopped else { return }
        heard = true
        heartbeat(generation: generation)
    }

    private func heartbeat(generation: Int) {
        queue.asyncAfter(deadline: .now() + heartbeatSeconds) { [weak self] in
            guard let self, self.generation == generation, let connection = self.connection, !self.stopped else { return }
            guard self.heard else { return self.giveUp(generation: generation, why: .unreachable("no answer from the hub")) }
            self.heard = false
            self.ping(on: connection)
            self.heartbeat(generation: generation)
        }
    }

    /// Sends a ping, noting when (its pong tells the hub's clock).
    private func ping(on connection: Connection) {
        connection.send([.ping(seq: nil)], via: client)
        clock.pingSent(at: localClock())
    }

    /// Ends a connection that is not answering (its late events are ignored) and goes offline.
    private func giveUp(generation: Int, why: Loss) {
        connection?.close(via: client)
        lost(generation: generation, why: why)
    }

    private func send(_ messages: [ClientMessage]) {
        guard !messages.isEmpty, let connection, link == .online else { return }
        connection.send(messages, via: client)
    }

    fileprivate func received(_ message: ServerMessage, generation: Int) {
        guard generation == self.generation, !stopped else { return }
        heard = true
        if case .pong(_, let time) = message { clock.pong(time: time, at: localClock()) }
        let before = sync.view
        let confirmedBefore = sync.confirmed
        let revision = sync.revision
        let pendingBefore = sync.pendingCount
        let (outgoing, events) = sync.receive(message)
        var notices: [Notice] = []
        switch message {
        case .undone(let r) where r.rev != nil: notices.append(.stepDone(redo: false, label: r.label))
        case .redone(let r) where r.rev != nil: notices.append(.stepDone(redo: true, label: r.label))
        case .undone(let r) where r.label == nil && r.skipped.isEmpty && r.entry == nil: notices.append(.nothingToDo(redo: false))
        case .redone(let r) where r.label == nil && r.skipped.isEmpty && r.entry == nil: notices.append(.nothingToDo(redo: true))
        default: break
        }
        var droppedUndos: [(label: String?, ops: [Diff])] = []
        var welcomed = false
        var reset = false
        // An answered undo or redo took its step off a stack even when it changed nothing (one with a
        // revision refreshes the timeline anyway): its ↶ mark must go. (The hub's `history` says so
        // too since session 43; before, it came only when the stacks' labels changed.)
        var stacksChanged = message.isStepTakenWithoutRevision
        for event in events {
            switch event {
            case .welcomed:
                link = .online
                welcomedHere = true
                backoff = 0.25
                redirects = 0
                resending = sync.pendingCount
                welcomed = true
                questions = [:]
                namings = [:]
            case .history: stacksChanged = true
            case .log(let page) where page.seq.map({ namings.removeValue(forKey: $0) != nil }) ?? false:
                notices.append(.named(page.entries))
            case .log(let page):
                if let question = page.seq.flatMap({ questions.removeValue(forKey: $0) }) {
                    ask(reader.answered(question, with: page))
                }
            case .blame(let blame):
                if let question = blame.seq.flatMap({ questions.removeValue(forKey: $0) }) {
                    ask(reader.answered(question, with: blame))
                }
            case .unanswered(let seq, _) where namings.removeValue(forKey: seq) != nil:
                break
            case .unanswered(let seq, _):
                if let question = questions.removeValue(forKey: seq) { ask(reader.failed(question)) }
            case .remote(let summary): notices.append(.remote(summary, people: confirmedBefore, after: sync.confirmed))
            case .skipped(let reports): notices.append(.skipped(reports, people: before, redo: message.isRedone))
            case .error(let error):
                notices.append(.error(error))
                if error.code == .unauthorized {
                    refusal = error.terminalWords
                    tokenEnded = sync.session != nil  // welcomed before: the room is this user's to carry on
                }
            case .redirect(let target):
                if let why = HubConnection.unfollowedRedirect(from: url, to: target) {
                    refusal = why  // the screen stops there and says why
                } else {
                    url = target
                    redirects += 1
                    redirecting = redirects <= Self.maxRedirects
                }
                connection?.close(via: client)
            case .undoDropped(let label, let ops):
                droppedUndos.append((label, ops))
            case .restoreAnswered(let rev, let made):
                notices.append(.restored(rev: rev, made: made))
            case .reset(_, let lost, let perhapsMore):
                reset = true
                notices.append(.reset(kept: sync.pendingCount, notSent: max(0, pendingBefore - sync.pendingCount),
                                      lost: lost, perhapsMore: perhapsMore))
            case .presence, .needsResync:
                break
            }
        }
        if !droppedUndos.isEmpty {
            notices = Self.folding(droppedUndos, into: notices, before: before, now: sync.confirmed, refused: message.isError)
            // A queued undo that went with its edit was never sent.
            resending = max(0, resending - droppedUndos.count)
        }
        if welcomed {
            ask(reader.reconnected(watchedPresent: reader.watched.map { sync.confirmed[$0] != nil } ?? false, reset: reset))
        } else {
            if sync.revision != revision, let diffs = message.revisionDiffs { ask(reader.revised(diffs)) }
            if stacksChanged { ask(reader.stacksChanged()) }
        }
        if resending > 0, sync.pendingCount == 0 {
            notices.append(.sent(resending))
            resending = 0
        }
        send(outgoing)
        if welcomed, let connection { ping(on: connection) }
        onUpdate?(notices)
    }

    /// The notice of each undo that went with its edit, saying why; the hub's reports for that edit
    /// (a `skipped` notice of the same answer) become its reasons instead of a notice of their own.
    /// `refused`: the answer was an error, so the edit was not made, whatever the room holds.
    static func folding(_ dropped: [(label: String?, ops: [Diff])], into notices: [Notice], before: PeopleModel,
                        now: PeopleModel, refused: Bool = false) -> [Notice] {
        var reports: [SkipReport] = []
        var kept: [Notice] = []
        for notice in notices {
            if case .skipped(let skipped, _, _) = notice { reports += skipped } else { kept.append(notice) }
        }
        let reasons = reports.sentences(people: before)
        for (label, ops) in dropped {
            var why = reasons
            if refused {
                why = ["the hub refused that change"]
            } else if why.isEmpty {
                let gone = Set(ops.map(\.tag)).filter { now[$0] == nil }.sorted()
                why = gone.isEmpty ? ["the room already had that change"] : gone.map { "\(before.called($0)) was removed" }
            }
            kept.append(.undoDropped(label: label, why: why))
        }
        return kept
    }

    /// Whether an admin deleted the room while it was open (the link is `.refused` for good then).
    public private(set) var deleted = false

    fileprivate func lost(generation: Int, why: Loss) {
        // Once per connection: one given up may still report its close.
        guard generation == self.generation, !stopped, connection != nil else { return }
        sync.disconnected()
        questions = [:]
        namings = [:]
        connection = nil
        if !welcomedHere, connectedURL == url, url != home {
            // A node a redirect named cannot be reached (or did not welcome): back to the address the
            // room was opened with, whose node sends the hello on or takes the room (PROTOCOL.md,
            // `redirect`; the web page does the same). Before, the screen tried the dead node forever.
            url = home
        }
        if case .closedByHub(code: 1000, reason: CloseReason.roomDeleted) = why {
            // An admin deleted the room: a reconnect would make a new room of the name from the seed and
            // undo the deletion unasked (a black-box pass, session 39). The screen stops and says so.
            deleted = true
            refusal = "an admin deleted room \(room); open it again to start a new room of that name"
        }
        if let refusal {
            redirecting = false  // a redirect that came with it is not followed: no loss to hide later
            link = .refused(refusal)
            onUpdate?([])
            return
        }
        if redirecting {
            // The hub sent this room to its node (cluster mode): no loss of the link to tell of, and no
            // wait (the screen said "the hub closed the connection (1000 redirect)" through the connect).
            redirecting = false
            queue.async { [weak self] in
                guard let self, self.generation == generation else { return }
                self.connect()
            }
            return
        }
        let wait = backoff
        backoff = min(backoff * 2, 5)
        let wasOnline = link == .online || link == .connecting && wait == 0.25
        link = .offline(retryAt: Date().addingTimeInterval(wait), why: why)
        onUpdate?(wasOnline ? [.offline(why)] : [])
        queue.asyncAfter(deadline: .now() + wait) { [weak self] in
            guard let self, self.generation == generation else { return }
            self.connect()
        }
    }

    /// One connection's delegate: hands what happens to the room's queue, tagged with its generation
    /// so that a late event of an old connection is ignored.
    private final class Connection: WebSocketClientDelegate, @unchecked Sendable {
        weak var room: LiveRoom?
        let generation: Int
        private let lock = NSLock()
        private var socket: WebSocketConnection?
        private var early: [OutboundMessage]
        /// Closed by the room (given up, or stopped): if the upgrade is answered after all, the
        /// connection is closed at once, its hello unsent.
        private var abandoned = false

        init(room: LiveRoom, generation: Int, first: [ClientMessage]) {
            self.room = room
            self.generation = generation
            self.early = first.map { OutboundMessage(text: $0.json.bytes) }
        }

        func send(_ messages: [ClientMessage], via client: WebSocketClient) {
            let outbound = messages.map { OutboundMessage(text: $0.json.bytes) }
            client.perform { [self] in
                guard let socket = lock.withLock({ socket }) else { return }
                for message in outbound { socket.send(message) }
            }
        }

        var isOpen: Bool { lock.withLock { socket != nil } }

        func close(via client: WebSocketClient) {
            lock.withLock { abandoned = true }
            client.perform { [self] in lock.withLock { socket }?.close(code: 1000) }
        }

        func didConnect(_ connection: WebSocketConnection) {
            let (early, abandoned) = lock.withLock {
                socket = connection
                defer { self.early = [] }
                return (self.early, self.abandoned)
            }
            if abandoned { return connection.close(code: 1000) }
            for message in early { connection.send(message) }
            guard let room else { return }
            room.queue.async { [generation] in room.opened(generation: generation) }
        }

        func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
            guard case .success(let decoded) = ServerMessage.decode(message), let room else { return }
            room.queue.async { [generation] in room.received(decoded, generation: generation) }
        }

        func didClose(_ connection: WebSocketConnection, error: String?) {
            lock.withLock { socket = nil }
            guard let room else { return }
            // The hub's code with its reason ("1011 store failed", "1001 hub shutting down").
            let why: Loss = if let error { .unreachable(error) }
                else if let code = connection.peerCloseCode { .closedByHub(code: code, reason: connection.peerCloseReason ?? "") }
                else { .unreachable("connection closed") }
            room.queue.async { [generation] in room.lost(generation: generation, why: why) }
        }
    }
}

extension ServerMessage {
    /// The diffs of the revision this message brings (an answer to a request, or a teammate's `ops`).
    fileprivate var revisionDiffs: [Diff]? {
        switch self {
        case .ops(let o): o.ops
        case .ack(let a): a.ops
        case .undone(let r), .redone(let r): r.ops
        case .restored(let r): r.ops
        default: nil
        }
    }

    /// An answer to an undo or redo that made no revision (every change skipped, or nothing to do).
    fileprivate var isRedone: Bool {
        if case .redone = self { true } else { false }
    }

    fileprivate var isStepTakenWithoutRevision: Bool {
        switch self {
        case .undone(let r), .redone(let r): r.rev == nil
        default: false
        }
    }
}
