import ArgumentParser
import Foundation
import WebSocketTransport

/// `peoplekeeper-bench relay`: a bare libwebsockets broadcast relay on the project's own transport.
///
/// Every text message a connection sends is queued, as one shared buffer, to every other connection
/// on the same path. No parsing, no state: the ceiling the hub's fan-out can approach, for the
/// server-CPU-per-delivery comparison in `make bench`.
struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Run a bare broadcast relay (the transport's ceiling) until SIGTERM / SIGINT.")

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port, 0 for any free one (printed at start).")
    var port = 0

    @Option(name: .customLong("service-threads"), help: "lws service threads (contexts on the one port), as the hub's transport.serviceThreads.")
    var serviceThreads = 1

    @Option(name: .customLong("event-loop"), help: "epoll or poll, as the hub's transport.eventLoop.")
    var eventLoop: LWSEventLoop = .epoll

    func run() async throws {
        let relay = Relay()
        let server = WebSocketServer(
            configuration: .init(host: host, port: port, limits: WebSocketLimits(), permessageDeflate: false,
                                 pingIntervalSeconds: 0, serviceThreads: serviceThreads,
                                 eventLoop: eventLoop),
            delegate: relay)
        let actual = try server.start()
        FileHandle.standardOutput.write(Data("relay listening on http://\(host):\(actual)/\n".utf8))
        await waitForTermination()
        await server.drain()
    }
}

/// The relay's delegate: rooms are paths.
final class Relay: WebSocketServerDelegate {
    private var rooms: [String: [UInt64: WebSocketConnection]] = [:]

    func refusal(of request: UpgradeRequest) -> UpgradeRefusal? { nil }
    func claims(_ request: HTTPRequest) -> Bool { false }
    func didOpen(_ connection: WebSocketConnection) { rooms[connection.path, default: [:]][connection.id] = connection }
    func didClose(_ connection: WebSocketConnection) { rooms[connection.path]?[connection.id] = nil }
    func didOverflow(_ connection: WebSocketConnection) {}
    func didReceiveOversized(_ connection: WebSocketConnection, bytes: Int) {}
    func handle(_ exchange: any HTTPExchange) -> Bool { false }

    func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
        let shared = OutboundMessage(text: message)
        for (id, other) in rooms[connection.path] ?? [:] where id != connection.id { other.send(shared) }
    }
}

extension LWSEventLoop: ExpressibleByArgument {}
