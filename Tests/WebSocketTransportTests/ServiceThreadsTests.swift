import Foundation
import PeopleTestSupport
import Synchronization
import Testing
@testable import WebSocketTransport

/// The server with several service threads (`serviceThreads`), over real sockets on loopback: accepted
/// sockets go to the contexts in turn, the delegate runs on each connection's home thread (one thread
/// by default; per path when the delegate says so), every connection's messages keep their order,
/// closes and slow consumers are reported wherever the connection is served, HTTP is answered from
/// every context, drain closes everything with 1001, and a port in use is refused.
@Suite("service threads", .serialized)
struct ServiceThreadsTests {
    @Test("accepted sockets go to both threads in turn; the delegate runs on one; a broadcast reaches everyone in order")
    func broadcastAcrossThreads() async throws {
        let relay = Relay()
        let (server, port) = try twoThreads(relay)
        let client = try WebSocketClient()
        let peers = try await Peer.connect(40, port: port, on: client, to: relay)

        // The home hands every other accepted socket to the second context.
        #expect(relay.threadsServing.filter { $0 == 0 }.count == 20)
        #expect(relay.threadsServing.filter { $0 == 1 }.count == 20)
        // Each sender's messages arrive at every other peer, in the order sent.
        for round in 0..<20 {
            for (index, peer) in peers.enumerated() where index % 4 == 0 { peer.send("\(index):\(round)") }
        }
        try await until("every message delivered") { peers.allSatisfy { $0.received.count == 9 * 20 || $0.received.count == 10 * 20 } }
        for (index, peer) in peers.enumerated() {
            var last: [Int: Int] = [:]
            for message in peer.received {
                let parts = message.split(separator: ":").map { Int($0)! }
                #expect(parts[0] != index)
                #expect(parts[1] == (last[parts[0]] ?? -1) + 1, "out of order at peer \(index): \(message)")
                last[parts[0]] = parts[1]
            }
            #expect(last.count == (index % 4 == 0 ? 9 : 10))
        }
        #expect(relay.delegateThreads == 1, "the delegate ran on \(relay.delegateThreads) threads")

        // A close asked for by the delegate reaches the peer on whichever thread serves it.
        relay.closeAll(code: 4000)
        try await until("every peer closed") { peers.allSatisfy { $0.closed } }
        #expect(peers.allSatisfy { $0.closeCode == 4000 })
        try await until("the delegate heard every close") { relay.closedCount == 40 }
        await client.shutdown()
        await server.drain()
    }

    @Test("on either event loop the loop asked for runs, and broadcasts larger than a socket takes at once arrive whole and in order",
          arguments: LWSEventLoop.allCases)
    func eitherEventLoop(_ loop: LWSEventLoop) async throws {
        let relay = Relay()
        let limits = WebSocketLimits(maxMessageBytes: 1 << 20, sendQueueMessages: 4096, sendQueueBytes: 64 << 20)
        let (server, port) = try twoThreads(relay, limits: limits, eventLoop: loop)
        #expect(server.eventLoopInUse == loop)
        let client = try WebSocketClient(limits: limits)
        let peers = try await Peer.connect(6, port: port, on: client, to: relay)
        // 20 messages of 200 KB from each of two senders, sent at once: more than loopback's socket
        // buffers take, so writes are partial and wait for the sockets to drain (while lws still holds
        // part of a message, nothing more may be written: on epoll that once stalled the receivers).
        for round in 0..<20 {
            for sender in 0..<2 {
                peers[sender].send("\(sender):\(round):" + String(repeating: Character(UnicodeScalar(UInt8(97 + round % 26))), count: 200_000))
            }
        }
        try await until("every message delivered") {
            peers.enumerated().allSatisfy { index, peer in peer.received.count == (index < 2 ? 20 : 40) }
        }
        for (index, peer) in peers.enumerated() {
            var last: [Int: Int] = [:]
            for message in peer.received {
                let parts = message.split(separator: ":", maxSplits: 2)
                let (sender, round) = (Int(parts[0])!, Int(parts[1])!)
                #expect(sender != index)
                #expect(round == (last[sender] ?? -1) + 1, "out of order at peer \(index)")
                #expect(parts[2].utf8.count == 200_000 && parts[2].utf8.allSatisfy { $0 == UInt8(97 + round % 26) })
                last[sender] = round
            }
        }
        await client.shutdown()
        await server.drain()
    }

    @Test("each path has its home thread: its events run there whichever thread serves the socket, its broadcasts reach every member in order, and drain hears every close")
    func homesByPath() async throws {
        let relay = Relay()
        relay.homes = ["/a": 0, "/b": 1, "/api/b": 1]
        let (server, port) = try twoThreads(relay)
        await relay.learnThreads(of: server)
        let client = try WebSocketClient()
        var peers: [String: [Peer]] = ["/a": [], "/b": []]
        // Alternating paths over the alternating contexts: each path has members served by both.
        for k in 0..<24 {
            let path = [0, 3].contains(k % 4) ? "/a" : "/b"
            peers[path]!.append(try await Peer.connect(port: port, path: path, on: client))
        }
        try await until("every connection opened") { relay.opened == 24 }
        for path in ["/a", "/b"] {
            #expect(Set(relay.threadsServing(path: path)) == [0, 1], "\(path) served by \(relay.threadsServing(path: path))")
        }
        for round in 0..<15 {
            for path in ["/a", "/b"] {
                for (index, peer) in peers[path]!.enumerated() where index % 3 == 0 { peer.send("\(path):\(index):\(round)") }
            }
        }
        // Each of a path's 12 members hears the 4 senders of its own path (not itself), 15 rounds each.
        try await until("every message delivered") {
            ["/a", "/b"].allSatisfy { path in peers[path]!.enumerated().allSatisfy { $0.element.received.count == ($0.offset % 3 == 0 ? 3 : 4) * 15 } }
        }
        for path in ["/a", "/b"] {
            for (index, peer) in peers[path]!.enumerated() {
                var last: [Int: Int] = [:]
                for message in peer.received {
                    let parts = message.split(separator: ":")
                    #expect(String(parts[0]) == path, "\(message) reached a member of \(path)")
                    let (sender, round) = (Int(parts[1])!, Int(parts[2])!)
                    #expect(sender != index)
                    #expect(round == (last[sender] ?? -1) + 1, "out of order at \(path) \(index): \(message)")
                    last[sender] = round
                }
            }
        }
        // HTTP goes to its path's home as well (claimed requests read by either context).
        for _ in 0..<10 {
            for path in ["/api/a", "/api/b"] {
                let answer = try await blocking { try rawGET(port: port, path: path) }
                #expect(answer.hasPrefix("HTTP/1.1 200"))
            }
        }
        #expect(relay.httpHomes == ["/api/a": [0], "/api/b": [1]], "\(relay.httpHomes)")
        #expect(relay.delegateThreads == 2)

        await server.drain(code: 1001, reason: "going away")
        let all = peers.values.flatMap { $0 }
        try await until("every peer closed") { all.allSatisfy { $0.closed } }
        #expect(all.allSatisfy { $0.closeCode == 1001 })
        #expect(relay.closedCount == 24, "the delegate heard \(relay.closedCount) closes")
        #expect(relay.misplaced.isEmpty, "delegate calls away from their home: \(relay.misplaced)")
        await client.shutdown()
    }

    @Test("drain closes the connections of every thread with 1001 and stops")
    func drainEveryThread() async throws {
        let relay = Relay()
        let (server, port) = try twoThreads(relay)
        let client = try WebSocketClient()
        let peers = try await Peer.connect(20, port: port, on: client, to: relay)
        #expect(Set(relay.threadsServing) == [0, 1])
        await server.drain(code: 1001, reason: "going away")
        try await until("every peer closed") { peers.allSatisfy { $0.closed } }
        #expect(peers.allSatisfy { $0.closeCode == 1001 })
        #expect(relay.closedCount == 20)
        await client.shutdown()
    }

    @Test("a drained server is freed, with its other contexts (none keeps itself alive)")
    func freedAfterDrain() async throws {
        weak var first: WebSocketServer?
        weak var second: WebSocketServer?
        do {
            let (server, _) = try twoThreads(Relay())
            first = server
            second = server.contexts[1]
            await server.drain()
        }
        try await until("both contexts freed") { first == nil && second == nil }
    }

    @Test("when shutdown or drain returns, the service threads have exited: a process may exit at once")
    func threadsGoneAfterStop() async throws {
        // The terminal client exits right after `shutdown()`; a thread still on its way out (OpenSSL's
        // per-thread clean-up, Foundation's) raced `exit`'s own clean-up and crashed, rarely.
        for _ in 0..<20 {
            let client = try WebSocketClient()
            let clientThread = try await kernelThreadID(of: client)
            await client.shutdown()
            #expect(Self.leftUserSpace(clientThread))
        }
        let (server, _) = try twoThreads(Relay())
        let serverThreads = [try await kernelThreadID(of: server), try await kernelThreadID(of: server.contexts[1])]
        await server.drain()
        for id in serverThreads { #expect(Self.leftUserSpace(id)) }
    }

    @Test("the service threads and the accepting thread carry their names (`top -H`, a debugger)")
    func threadsAreNamed() async throws {
        let (server, _) = try twoThreads(Relay())
        let serviceThread = try await kernelThreadID(of: server.contexts[1])
        #expect(Self.threadName(serviceThread) == "lws-server-1")
        // The accepting thread names itself once it runs.
        func names() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [])
                .compactMap { Int32($0).flatMap(Self.threadName) }
        }
        try? await until("a thread named lws-accept") { names().contains("lws-accept") }
        #expect(names().contains("lws-accept"), "threads: \(names().sorted())")
        await server.drain()
    }

    /// The name Linux gives thread `id` of this process.
    static func threadName(_ id: Int32) -> String? {
        (try? String(contentsOfFile: "/proc/self/task/\(id)/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether the thread `id` of this process runs no more code of ours: it is gone from /proc, or the
    /// kernel is ending it (`PF_EXITING` in its flags). A join returns when the kernel wakes the joiner
    /// in the middle of the thread's exit, so its /proc entry can still be there for a moment (a
    /// fresh-clone run saw it); a thread still in user space, never joined, is not exiting.
    static func leftUserSpace(_ id: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/self/task/\(id)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return true }
        // After "pid (comm)": state ppid pgrp session tty_nr tpgid flags …
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 6, let flags = UInt64(fields[6]) else { return true }
        let exiting: UInt64 = 0x4  // PF_EXITING
        return flags & exiting != 0
    }

    @Test("a slow consumer served by another thread is closed with 1008 and reported to the delegate")
    func slowConsumerElsewhere() async throws {
        let relay = Relay()
        let limits = WebSocketLimits(maxMessageBytes: 1 << 20, sendQueueMessages: 4, sendQueueBytes: 1 << 20)
        let (server, port) = try twoThreads(relay, limits: limits)
        let client = try WebSocketClient()
        var peers: [Peer] = []
        // Until one connection is served by the second thread.
        while !relay.threadsServing.contains(1) {
            peers.append(try await Peer.connect(port: port, path: "/room", on: client))
            try await until("opened") { relay.opened == peers.count }
        }
        let id = relay.connectionIDs(servedBy: 1)[0]
        // 1,000 messages in one go from the delegate's thread: the queue of 4 overflows there.
        relay.flood(id, count: 1_000)
        try await until("the overflow reported") { relay.overflowed.contains(id) }
        try await until("closed") { relay.closedIDs.contains(id) }
        await client.shutdown()
        await server.drain()
    }

    @Test("a client sending faster than the home thread handles its frames is paused, not buffered: nothing lost, in order")
    func readingPausesBehindTheHome() async throws {
        let relay = Relay()
        relay.slowReceive = true  // 2 ms per frame at home
        let (server, port) = try twoThreads(relay)
        let client = try WebSocketClient()
        var peers: [Peer] = []
        while !relay.threadsServing.contains(1) {
            peers.append(try await Peer.connect(port: port, path: "/flood", on: client))
            try await until("opened") { relay.opened == peers.count }
        }
        let flooder = peers.last!  // the first (and only) one the second thread serves
        let id = relay.connectionIDs(servedBy: 1)[0]
        for k in 0..<500 { flooder.send("f:\(k)") }
        try await until("every frame handled") { relay.received(from: id).count == 500 }
        #expect(relay.received(from: id) == (0..<500).map { "f:\($0)" })
        let peak = try await relay.onServingThread(of: id) { $0.mostFramesAtHome }
        #expect(peak <= WebSocketConnection.pauseReadingAt + 1, "\(peak) frames waited at home at once")
        #expect(peak >= WebSocketConnection.pauseReadingAt, "the flood never reached the pause (\(peak))")
        await client.shutdown()
        await server.drain()
    }

    @Test("HTTP is answered from every thread: claimed requests by the delegate, the rest as files or 404")
    func httpFromEveryThread() async throws {
        let relay = Relay()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("pk-transport-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try Data("hello file\n".utf8).write(to: root.appendingPathComponent("index.html"))
        let (server, port) = try twoThreads(relay, webRoot: root.path)
        for _ in 0..<30 {
            let claimed = try await blocking { try rawGET(port: port, path: "/api/x") }
            #expect(claimed.hasPrefix("HTTP/1.1 200"))
            #expect(claimed.hasSuffix("from the delegate\n"))
            let file = try await blocking { try rawGET(port: port, path: "/") }
            #expect(file.hasPrefix("HTTP/1.1 200"))
            #expect(file.hasSuffix("hello file\n"))
            let missing = try await blocking { try rawGET(port: port, path: "/nothing-here") }
            #expect(missing.hasPrefix("HTTP/1.1 404"))
        }
        #expect(relay.delegateThreads == 1)
        #expect(relay.httpThreads == [0, 1], "HTTP served by \(relay.httpThreads)")
        await server.drain()
    }

    @Test("a request body that trickles past bodySeconds is cut off; one in time is answered")
    func bodyDeadline() async throws {
        let relay = Relay()
        let server = WebSocketServer(configuration: .init(port: 0, pingIntervalSeconds: 0, bodySeconds: 1), delegate: relay)
        let port = try server.start()
        // In time: the whole body at once.
        let answered = try await blocking { try rawPOST(port: port, path: "/api/x", body: Array(repeating: 120, count: 40),
                                                        pause: 0) }
        #expect(answered.text.hasPrefix("HTTP/1.1 200"), "\(answered.text)")
        // A byte every 200 ms (each well inside lws's 5-second pause): 40 bytes would take 8 s.
        let trickled = try await blocking { try rawPOST(port: port, path: "/api/x", body: Array(repeating: 120, count: 40),
                                                        pause: 0.2) }
        #expect(trickled.text.isEmpty, "answered: \(trickled.text)")
        #expect(trickled.seconds < 6, "closed after \(trickled.seconds) s")  // the whole trickle: 8 s
        await server.drain()
    }

    @Test("a port something already listens on is refused, with one service thread and with several")
    func portInUse() async throws {
        let relay = Relay()
        let (first, port) = try twoThreads(relay)
        for threads in [1, 2] {
            let second = WebSocketServer(configuration: .init(port: port, pingIntervalSeconds: 0, serviceThreads: threads),
                                         delegate: relay)
            #expect(throws: WebSocketTransportError.self) { try second.start() }
        }
        // The first still serves, on both threads.
        let client = try WebSocketClient()
        let peers = try await Peer.connect(4, port: port, on: client, to: relay)
        #expect(Set(relay.threadsServing) == [0, 1])
        _ = peers
        await client.shutdown()
        await first.drain()
    }
}

// MARK: The delegate under test

/// A broadcast relay that records where and how it was called. Delegate methods run on the home thread;
/// the test reads the records through the lock.
private final class Relay: WebSocketServerDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var connections: [UInt64: WebSocketConnection] = [:]
    private var served: [UInt64: Int] = [:]
    private var threads: Set<UInt> = []
    private var httpServed: Set<Int> = []
    private var opens = 0
    private var closes: [UInt64] = []
    private var overflows: [UInt64] = []
    private var receivedFrom: [UInt64: [String]] = [:]
    /// Frames are only recorded, each after 2 ms (a busy home thread).
    var slowReceive = false
    /// Path prefix → home thread (set before the server starts); others: 0.
    var homes: [String: Int] = [:]
    private var paths: [UInt64: String] = [:]
    private var httpHome: [String: Set<Int>] = [:]
    private var wrongThread: [String] = []

    func homeThread(forPath path: String, threads: Int) -> Int {
        homes.filter { path.hasPrefix($0.key) }.max { $0.key.count < $1.key.count }?.value ?? 0
    }

    /// The service thread running the caller (lws-server-N), or -1.
    /// Each service thread's pthread, learnt from the server (`learnThreads`).
    private var serviceThreadOf: [UInt: Int] = [:]

    /// Learns which pthread runs each of the server's contexts.
    func learnThreads(of server: WebSocketServer) async {
        for (index, context) in server.contexts.enumerated() {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                context.perform { [self] in
                    lock.withLock { serviceThreadOf[UInt(pthread_self())] = index }
                    done.resume()
                }
            }
        }
    }

    /// The service thread running the caller (lock held), or -1.
    private var currentServiceThread: Int { serviceThreadOf[UInt(pthread_self())] ?? -1 }

    /// Records a delegate call for `connection` made away from its home thread.
    private func checkHome(_ connection: WebSocketConnection, _ call: String) {
        let here = currentServiceThread
        if here != connection.homeThread { wrongThread.append("\(call) of \(connection.id) on \(here), home \(connection.homeThread)") }
    }

    var misplaced: [String] { lock.withLock { wrongThread } }
    var httpHomes: [String: Set<Int>] { lock.withLock { httpHome } }
    func threadsServing(path: String) -> [Int] { lock.withLock { served.filter { paths[$0.key] == path }.map(\.value) } }

    func received(from id: UInt64) -> [String] { lock.withLock { receivedFrom[id] ?? [] } }

    /// Reads something of a connection on the thread that serves it.
    func onServingThread<T: Sendable>(of id: UInt64, _ read: @escaping @Sendable (WebSocketConnection) -> T) async throws -> T {
        let connection = lock.withLock { connections[id] }!
        let box = Unchecked(connection)
        return try await withCheckedThrowingContinuation { continuation in
            connection.owner.inbox.post { continuation.resume(returning: read(box.value)) }
        }
    }

    private func record<T>(_ body: () -> T) -> T {
        lock.withLock {
            threads.insert(UInt(pthread_self()))
            return body()
        }
    }

    var opened: Int { lock.withLock { opens } }
    var closedCount: Int { lock.withLock { closes.count } }
    var closedIDs: [UInt64] { lock.withLock { closes } }
    var overflowed: [UInt64] { lock.withLock { overflows } }
    var delegateThreads: Int { lock.withLock { threads.count } }
    var threadsServing: [Int] { lock.withLock { Array(served.values) } }
    var httpThreads: Set<Int> { lock.withLock { httpServed } }
    func connectionIDs(servedBy thread: Int) -> [UInt64] { lock.withLock { served.filter { $0.value == thread }.map(\.key) } }

    func refusal(of request: UpgradeRequest) -> UpgradeRefusal? { nil }
    func claims(_ request: HTTPRequest) -> Bool { request.path.hasPrefix("/api/") }

    func didOpen(_ connection: WebSocketConnection) {
        record {
            checkHome(connection, "didOpen")
            connections[connection.id] = connection
            served[connection.id] = connection.serviceThread
            paths[connection.id] = connection.path
            opens += 1
        }
    }

    func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
        if slowReceive {
            usleep(2_000)
            record { receivedFrom[connection.id, default: []].append(String(decoding: message, as: UTF8.self)) }
            return
        }
        let others = record {
            checkHome(connection, "didReceive")
            return connections.values.filter { $0.id != connection.id && $0.path == connection.path }
        }
        let shared = OutboundMessage(text: message)
        for other in others { other.send(shared) }
    }

    func didReceiveOversized(_ connection: WebSocketConnection, bytes: Int) {}

    func didClose(_ connection: WebSocketConnection) {
        record {
            checkHome(connection, "didClose")
            connections[connection.id] = nil
            closes.append(connection.id)
        }
    }

    func didOverflow(_ connection: WebSocketConnection) {
        record { overflows.append(connection.id) }
    }

    func handle(_ exchange: any HTTPExchange) -> Bool {
        guard claims(exchange.request) else { return false }
        record {
            httpServed.insert((exchange as? ServerHTTPExchange)?.server?.serviceThreadIndex ?? -1)
            httpHome[exchange.request.path, default: []].insert(currentServiceThread)
        }
        exchange.respond(HTTPResponse(status: 200, text: "from the delegate\n"))
        return true
    }

    /// From the test: every open connection is closed (on the home thread, as a delegate would).
    func closeAll(code: UInt16) {
        let all = lock.withLock { Array(connections.values) }
        let box = Unchecked(all)
        perform { for connection in box.value { connection.close(code: code, reason: "bye") } }
    }

    func flood(_ id: UInt64, count: Int) {
        let connection = lock.withLock { connections[id] }
        let box = Unchecked(connection)
        perform {
            let message = OutboundMessage(text: Array(repeating: UInt8(ascii: "x"), count: 1000))
            for _ in 0..<count { box.value?.send(message) }
        }
    }

    /// Runs work the test starts on the home thread, where the delegate runs.
    private func perform(_ work: @escaping @Sendable () -> Void) {
        let connection = lock.withLock { connections.values.first }
        // Every connection's home is the first context here (the default); post there.
        connection?.home.inbox.post(work)
    }
}

// MARK: A peer

private final class Peer: WebSocketClientDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var connection: WebSocketConnection?
    private var messages: [String] = []
    private var connected = false
    private var isClosed = false
    private var code: UInt16?
    let client: WebSocketClient

    init(client: WebSocketClient) { self.client = client }

    static func connect(port: Int, path: String, on client: WebSocketClient) async throws -> Peer {
        let peer = Peer(client: client)
        try client.connect(url: "ws://127.0.0.1:\(port)\(path)", delegate: peer)
        try await until("connected") { peer.lock.withLock { peer.connected || peer.isClosed } }
        guard peer.lock.withLock({ peer.connected }) else { throw TransportTestError("could not connect") }
        return peer
    }

    /// `count` peers on `/room`, once the relay has heard every one open.
    static func connect(_ count: Int, port: Int, on client: WebSocketClient, to relay: Relay) async throws -> [Peer] {
        let opened = relay.opened
        var peers: [Peer] = []
        for _ in 0..<count { peers.append(try await connect(port: port, path: "/room", on: client)) }
        try await until("every connection opened") { relay.opened == opened + count }
        return peers
    }

    var received: [String] { lock.withLock { messages } }
    var closed: Bool { lock.withLock { isClosed } }
    var closeCode: UInt16? { lock.withLock { code } }

    func send(_ text: String) {
        let box = Unchecked(self)
        client.perform { box.value.lock.withLock { box.value.connection }?.send(OutboundMessage(text: Array(text.utf8))) }
    }

    func didConnect(_ connection: WebSocketConnection) { lock.withLock { self.connection = connection; connected = true } }
    func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
        lock.withLock { messages.append(String(decoding: message, as: UTF8.self)) }
    }
    func didClose(_ connection: WebSocketConnection, error: String?) {
        lock.withLock { isClosed = true; code = connection.peerCloseCode }
    }
}

// MARK: Helpers

struct TransportTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A server on a free port with two service threads (no pings), started.
/// The kernel's id of `endpoint`'s service thread (a directory of /proc/self/task while it exists).
private func kernelThreadID(of endpoint: LWSEndpoint) async throws -> Int32 {
    let id = Mutex<Int32?>(nil)
    endpoint.perform {
        // /proc/thread-self -> "PID/task/TID"
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        id.withLock { $0 = Int32(link.split(separator: "/").last.map(String.init) ?? "") ?? -1 }
    }
    try await until("the service thread answers") { id.withLock { $0 } != nil }
    let known = id.withLock { $0! }
    guard known > 0, FileManager.default.fileExists(atPath: "/proc/self/task/\(known)") else {
        throw TransportTestError("cannot tell the service thread's id (\(known))")
    }
    return known
}

private func twoThreads(_ relay: Relay, limits: WebSocketLimits = WebSocketLimits(),
                        webRoot: String? = nil, eventLoop: LWSEventLoop = .epoll) throws -> (WebSocketServer, Int) {
    let server = WebSocketServer(configuration: .init(port: 0, webRoot: webRoot, limits: limits, pingIntervalSeconds: 0,
                                                      serviceThreads: 2, eventLoop: eventLoop), delegate: relay)
    return (server, try server.start())
}

/// Polls `condition` every 10 ms for up to 10 s.
private func until(_ what: String, _ condition: @escaping () -> Bool) async throws {
    for _ in 0..<1000 {
        if condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    throw TransportTestError("timed out waiting for: \(what)")
}

/// A TCP socket connected to 127.0.0.1:`port`.
private func connectedSocket(port: Int) throws -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TransportTestError("socket") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        close(fd)
        throw TransportTestError("connect")
    }
    return fd
}

/// One HTTP/1.1 POST over a plain socket, its body sent a byte every `pause` seconds (all at once for
/// 0), stopping early once the server closes; what came back (empty if nothing) and when it ended.
private func rawPOST(port: Int, path: String, body: [UInt8], pause: Double) throws -> (text: String, seconds: Double) {
    let fd = try connectedSocket(port: port)
    defer { close(fd) }
    var ignore = sigaction()
    ignore.__sigaction_handler.sa_handler = SIG_IGN
    sigaction(SIGPIPE, &ignore, nil)
    let start = ContinuousClock.now
    let head = Array("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
    _ = head.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    if pause == 0 {
        _ = body.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    } else {
        for byte in body {
            Thread.sleep(forTimeInterval: pause)
            if [byte].withUnsafeBytes({ write(fd, $0.baseAddress, 1) }) != 1 { break }
        }
    }
    let answer = readAnswer(fd)
    let elapsed = start.duration(to: .now)
    return (answer, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

/// One HTTP/1.1 GET over a plain socket (Connection: close); the whole answer as text.
private func rawGET(port: Int, path: String) throws -> String {
    let fd = try connectedSocket(port: port)
    defer { close(fd) }
    let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
    _ = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    return readAnswer(fd)
}

/// What the server sends on `fd` until it closes, or until the declared body of its answer is in (a
/// keep-alive answer would not end the stream); empty if it closed without a word.
private func readAnswer(_ fd: Int32) -> String {
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        answer += buffer[0..<n]
        // A keep-alive answer would not end the stream: stop once the declared body is in.
        if let text = String(bytes: answer, encoding: .utf8), let headEnd = text.range(of: "\r\n\r\n"),
           let lengthLine = text[..<headEnd.lowerBound].split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") }),
           let length = Int(lengthLine.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)),
           text.utf8.count - text.utf8.distance(from: text.utf8.startIndex, to: headEnd.upperBound) >= length {
            break
        }
    }
    return String(decoding: answer, as: UTF8.self)
}
