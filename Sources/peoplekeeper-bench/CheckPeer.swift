import PeopleCore
import WebSocketTransport

/// The fresh client that reads one room's final state into a `RoomCheck` after the run.
final class CheckPeer: WebSocketClientDelegate {
    let room: Int
    let check: RoomCheck

    init(room: Int, check: RoomCheck) {
        self.room = room
        self.check = check
    }

    func didConnect(_ connection: WebSocketConnection) {
        let hello = ClientMessage.hello(.init(user: "load-check", client: "peoplekeeper-bench/load"))
        connection.send(OutboundMessage(text: hello.json.bytes))
    }

    func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
        guard case .success(.welcome(let w)) = ServerMessage.decode(message) else { return }
        check.models[room] = PeopleModel(people: w.people ?? [])
        check.revisions[room] = w.rev
        check.finish()
        connection.close()
    }

    func didClose(_ connection: WebSocketConnection, error: String?) {
        // Closed before its welcome (refused, or the hub is full): the room's state is unknown.
        if check.revisions[room] == -1 {
            check.revisions[room] = -2
            check.finish()
        }
    }
}
