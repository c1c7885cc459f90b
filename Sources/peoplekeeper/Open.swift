import ArgumentParser
import Dispatch
import Foundation
import PeopleClient
import PeopleCore

struct Open: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The interactive screen: edit a room live, with your own undo.",
        discussion: """
            Keys: ↑↓ or j k move (PgUp / PgDn a page, Home / End or g / G to the first / last), Tab / → / ← switch between the list and the details, Enter edits the \
            field (typing a name sends each character; on a color, a length or a topic a chooser: ← → \
            then Enter sets the value in one change, Esc leaves it; glasses and facial hair turn on / \
            off), / finds a person by name (n the next), a adds, d deletes (asks), m moves, u / r undo / redo your newest change, U / R your \
            newest change to the selected person, h the room's history (Enter undoes one of your own \
            changes there, R restores the room to a row after asking), ? help, q quits. The details show \
            who last changed each field, and when. A viewer's screen says view only and offers no edits \
            (the history can be looked at). Edits made while the hub is unreachable are kept and sent when it is \
            back. NO_COLOR turns colors off.

            Examples:
              peoplekeeper open team-a --user ann
              peoplekeeper open team-a --user ann --url ws://hub.example:8080
            """)
    @Argument(help: "The room.") var room: String
    @Option(help: ArgumentHelp("Who you are (default: $PEOPLEKEEPER_USER, else $USER).", valueName: "name")) var user: String?
    @Option(help: ArgumentHelp("The hub, ws://host:port or wss://host:port (default: $PEOPLEKEEPER_URL, else ws://127.0.0.1:8080).", valueName: "url"))
    var url: String?
    @Option(name: .customLong("ca-file"), help: ArgumentHelp("PEM certificates to trust for wss:// instead of the system's (default: $PEOPLEKEEPER_CA_FILE).", valueName: "file"))
    var caFile: String?
    @Option(help: ArgumentHelp("An access token, for a hub with auth.mode token (default: $PEOPLEKEEPER_TOKEN).", valueName: "token"))
    var token: String?
    @Option(help: ArgumentHelp("Seconds of silence from the hub before a ping checks the link; as many again unanswered and the link is given up and tried again (2 to 600).", valueName: "seconds"))
    var heartbeat: Int = Int(LiveRoom.defaultHeartbeatSeconds)

    func validate() throws {
        guard (2...600).contains(heartbeat) else {
            throw ValidationError("--heartbeat must be 2 to 600 seconds (got \(heartbeat))")
        }
    }

    func run() async throws {
        let hubURL = Defaults.url(url)
        let userName = Defaults.user(user)
        try Defaults.validate(url: url, user: user)
        let roomName = try Defaults.room(room)
        let terminal = Terminal()
        guard terminal.isInteractive else {
            throw ValidationError("open needs a terminal (stdin and stdout); for scripts use list, set, undo, watch…")
        }
        // A terminal that cannot move its cursor (an editor's shell buffer, `TERM=dumb`) would show the
        // screen's codes as text.
        guard terminal.canDrawScreen else {
            throw ValidationError("open needs a terminal that can draw a screen (TERM is \(terminal.name ?? "not set")); here use list, log, watch, set, undo…")
        }
        let queue = DispatchQueue(label: "peoplekeeper.screen")
        let live = try LiveRoom(base: hubURL, room: roomName, user: userName, token: Defaults.token(token),
                                caFile: Defaults.caFile(caFile), heartbeatSeconds: Double(heartbeat), queue: queue)
        let screen = Screen(room: live, terminal: terminal, queue: queue)
        let quit = DispatchSemaphore(value: 0)
        let resize = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: queue)
        // Redrawn every second while offline, so the retry countdown moves, and while times show (the
        // history view, the details' writers), so that `2 min ago` stays true.
        let tick = DispatchSource.makeTimerSource(queue: queue)
        tick.schedule(deadline: .now() + 1, repeating: 1)
        tick.setEventHandler { if case .offline = live.link { screen.render() } else if screen.showsTimes { screen.render() } }
        signal(SIGWINCH, SIG_IGN)
        // SIGTSTP from elsewhere (`kill -TSTP`) suspends as Ctrl-Z does: the terminal put back first.
        let stop = DispatchSource.makeSignalSource(signal: SIGTSTP, queue: queue)
        signal(SIGTSTP, SIG_IGN)
        stop.setEventHandler { terminal.suspend { screen.render() } }
        stop.resume()
        let continued = DispatchSource.makeSignalSource(signal: SIGCONT, queue: queue)
        continued.setEventHandler {
            terminal.resumed()
            screen.render()
        }
        continued.resume()
        queue.sync {
            terminal.enter()
            screen.onQuit = { quit.signal() }
            live.onUpdate = { notices in screen.update(notices) }
            resize.setEventHandler { screen.render() }
            resize.resume()
            tick.resume()
            live.start()
            screen.render()
        }
        terminal.readKeys { key in queue.async { screen.handle(key) } }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                quit.wait()
                done.resume()
            }
        }
        queue.sync {
            resize.cancel()
            tick.cancel()
            stop.cancel()
            continued.cancel()
            terminal.restore()
        }
        // An edit made just before quitting is usually on its way: its answer is waited for (up to 3 s)
        // while the hub is reachable, so that `q` right after a change neither loses it nor says it
        // did (it said "1 change(s) … are lost" of changes the hub had).
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline, queue.sync(execute: { live.sync.pendingCount > 0 && live.link == .online }) {
            try? await Task.sleep(for: .milliseconds(20))
        }
        await live.stop()
        let (lost, refusal, deleted) = queue.sync { (live.sync.pendingCount, screen.accessRefusal, live.deleted) }
        Foundation.exit(Self.ending(lost: lost, refusal: refusal, deleted: deleted))
    }

    /// The exit status once the screen is closed, with its lines on stderr: 77 when the hub refused
    /// this user's access and no new token was let in since (the changes lost with it are counted
    /// too: a new token, not a later try, is what they need); 75 when changes of the user's had not
    /// reached the hub (`deleted`: an admin deleted the room, where they could never go); else 0.
    static func ending(lost: Int, refusal: String?, deleted: Bool = false) -> Int32 {
        if lost > 0 {
            complain(deleted ? "\(lost) change(s) were not made: an admin deleted the room"
                             : "\(lost) change(s) had not reached the hub and are lost")
        }
        if let refusal {
            complain(refusal)
            return 77
        }
        return lost > 0 ? 75 : 0
    }
}
