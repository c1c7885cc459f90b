import ArgumentParser
import Foundation
import WebSocketTransport

/// `peoplekeeper-hub echo`: the hub's transport with no rooms, sending every message back as it came
/// (text or binary). For protocol-conformance runs (the Autobahn TestSuite, `make conformance`): it
/// exercises the same libwebsockets server, framing, reassembly, UTF-8 checks and send queues that
/// `serve` uses, without the PeopleKeeper protocol on top.
struct Echo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Test mode: a WebSocket echo server on the hub's transport (for conformance suites).",
        discussion: """
            Every WebSocket path is accepted; each whole message is sent back unchanged. Not for \
            production: there are no rooms, no authentication and no limits beyond message size.

            Example:
              peoplekeeper-hub echo --port 9001 --deflate
            """)

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on, 0 for any free one (printed at start).") var port = 9001
    @Flag(help: "Offer permessage-deflate (RFC 7692).") var deflate = false
    @Option(name: .customLong("max-message-bytes"), help: "Largest message echoed; bigger ones close with 1009.")
    var maxMessageBytes = 64 << 20

    func run() async throws {
        let echo = EchoDelegate()
        let server = WebSocketServer(configuration: .init(
            host: host, port: port,
            limits: WebSocketLimits(maxMessageBytes: maxMessageBytes, sendQueueMessages: 1 << 16,
                                    sendQueueBytes: 4 * maxMessageBytes),
            permessageDeflate: deflate, pingIntervalSeconds: 0), delegate: echo)
        let actual = try server.start()
        writeBanner("echo listening on ws://\(host):\(actual)/ (permessage-deflate \(deflate ? "on" : "off"))\n")
        await waitForTermination()
        await server.drain(code: 1001, reason: "echo server stopping")
    }
}

/// Sends every message back on the connection it came from. Service thread only.
private final class EchoDelegate: WebSocketServerDelegate {
    func refusal(of request: UpgradeRequest) -> UpgradeRefusal? { nil }
    func claims(_ request: HTTPRequest) -> Bool { true }
    func didOpen(_ connection: WebSocketConnection) {}
    func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
        connection.send(binary ? OutboundMessage(binary: message) : OutboundMessage(text: message))
    }
    func didReceiveOversized(_ connection: WebSocketConnection, bytes: Int) {
        connection.close(code: 1009, reason: "message too big", discardQueued: true)
    }
    func didClose(_ connection: WebSocketConnection) {}
    func didOverflow(_ connection: WebSocketConnection) {}
    func handle(_ exchange: any HTTPExchange) -> Bool {
        exchange.respond(HTTPResponse(status: 200, text: "peoplekeeper-hub echo test mode\n"))
        return true
    }
}
