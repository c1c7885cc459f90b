import ArgumentParser
import BuildIdentity
import Foundation
import PeopleClient
import PeopleCore
import WebSocketTransport

/// `peoplekeeper`: the terminal client. Each scriptable command connects, does one thing, prints the
/// result and exits with a status a shell can test (docs/CLIENT.md).
@main
struct PeopleKeeper: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peoplekeeper",
        abstract: "Edit a PeopleKeeper room from the terminal, with an undo of your own.",
        discussion: """
            Exit status: 0 done; 1 nothing to undo, redo or restore; 64 usage; 65 the room refused the \
            request (no such person, invalid-op, no-entry: not on your undo stack); 69 the hub is \
            unreachable; 75 try again later (rate-limited, room-full, server-error, stale-base); 77 not \
            allowed (a viewer's edit, undo or restore, a missing or refused token). docs/CLIENT.md has the details.

            Examples:
              peoplekeeper list --room team-a
              peoplekeeper set 1 hairColor red --room team-a --user ann
              peoplekeeper undo --room team-a --user ann
              peoplekeeper log --room team-a
              PEOPLEKEEPER_ROOM=team-a peoplekeeper watch --json
            """,
        version: "peoplekeeper \(BuildIdentity.versionLine)",
        subcommands: [
            Open.self, List.self, Show.self, Add.self, SetField.self, Like.self, Dislike.self, Neutral.self, FacialHair.self,
            Move.self, Remove.self, Undo.self, Redo.self, History.self, Log.self, Blame.self, Restore.self, Watch.self,
        ]
    )

    /// As ArgumentParser's, except that a usage error is one line on stderr, `peoplekeeper: …`, exit 64
    /// (help and version print as usual; a command's own failures have printed already).
    /// With `--json`, stdout gets the usage error too, as it gets every other error (`fail`).
    static func main() async {
        // A stream the client was started without (`>&-`) is /dev/null: otherwise the hub's socket
        // could take that number, and the output would be written into the connection.
        for descriptor: Int32 in 0...2 where fcntl(descriptor, F_GETFD) == -1 { _ = open("/dev/null", O_RDWR) }
        do {
            try checkUTF8()
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            var status = exitCode(for: error)
            let arguments = Array(CommandLine.arguments.dropFirst())
            let dashed = dashedValue(in: arguments)
            // Help asked for by a value read as options (`-John` is -J -o -h -n to the parser) is a
            // usage error, not help and exit 0: a script renaming people got success and no change.
            let helpByAccident = status == .success && !(error is ExitCode) && dashed != nil
                && !arguments.contains(where: { ["-h", "--help", "help"].contains($0) })
            if helpByAccident { status = .validationFailure }
            if status == .success || error is ExitCode { exit(withError: error) }
            var message = helpByAccident ? "" : self.message(for: error).split(whereSeparator: \.isNewline)
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
            if let first = arguments.first, !first.hasPrefix("-"), !commandNames.contains(first) {
                message = "unknown command '\(first)': peoplekeeper help lists them"
            } else if let (dashed, place) = dashed,
                      helpByAccident || ["Missing", "Unknown option", "Unexpected argument", "The value"].contains(where: message.hasPrefix) {
                // The parser's complaints that a dashed value explains (a command's own checks say more).
                message += (message.isEmpty ? "" : "; ") + "'\(dashed)' was read as options: "
                if let numbers = Self.negativeNumberMeaning(arguments, at: place) {
                    // Not the way to give a negative number (`restore -1`): there is none to give.
                    message += numbers
                } else if place > 0, arguments[place - 1].hasPrefix("--") {
                    // An option's value (`--user -1`): the way to give it is that option's.
                    message += "write the option's value with = (\(arguments[place - 1])=\(dashed))"
                } else {
                    message += "to give a value that starts with -, put -- before the command's values (e.g. "
                        + "peoplekeeper set 4 name -- \(dashed)), or write an option's value with = (e.g. --name=\(dashed))"
                }
            }
            if arguments.contains("--json") {
                output(JSON.object(["error": JSON.object(["code": .string("usage"), "message": .string(message)])]).text)
            }
            complain(message)
            Foundation.exit(status.rawValue)
        }
    }

    /// What a number is, for a negative one the parser read as options where a command takes a number
    /// (`restore -1`, `move 2 -3`, `like -2 music`): nil where the value may be text (`set 4 name -1`)
    /// or is an option's (`--user -1`).
    /// `place`: where the dashed value is (`dashedValue`); none before the command's name.
    static func negativeNumberMeaning(_ arguments: [String], at place: Int) -> String? {
        guard place > 0, Int(arguments[place]) != nil, !arguments[place - 1].hasPrefix("-") else { return nil }
        let command = arguments[0]
        let tag = "TAG is a person's tag (peoplekeeper list shows them), 1 or more"
        switch (command, place) {
        case ("restore", 1): return "REV is a revision number, 0 or more"
        case ("move", 2): return "INDEX is a place in the list, 0 or more (0 is first)"
        case ("remove", 1), ("show", 1), ("blame", 1), ("move", 1), ("set", 1), ("like", 1), ("dislike", 1),
             ("neutral", 1), ("facial-hair", 1): return tag
        default: return nil
        }
    }

    /// The subcommands' names, and `help`.
    static var commandNames: Set<String> {
        Set(configuration.subcommands.map { $0._commandName } + ["help"])
    }

    /// Every argument must be UTF-8: Swift reads others with U+FFFD in place of the bytes it cannot
    /// decode, so a name from Latin-1 data was stored as "��" and the command succeeded.
    static func checkUTF8() throws {
        for index in 1..<Int(CommandLine.argc) {
            guard let raw = CommandLine.unsafeArgv[index] else { continue }
            if String(validatingCString: raw) == nil {
                // Printable ASCII as it is, every other byte as \xNN: what the user can find in the data.
                let shown = UnsafeBufferPointer(start: raw, count: strlen(raw)).map { UInt8(bitPattern: $0) }
                    .map { (0x20..<0x7F).contains($0) ? String(UnicodeScalar($0)) : "\\x" + String($0, radix: 16, uppercase: false).leftPadded(2) }
                    .joined()
                throw ValidationError("argument \(index) is not UTF-8 text (\(shown)): "
                                      + "convert it first, e.g. with iconv -f latin1 -t utf-8")
            }
        }
    }

    /// The first argument before `--` that starts with one `-` and is not `-h`: a value (a name such as
    /// `-John`, a negative number) the parser takes for options.
    /// Returned with its place in `arguments`.
    static func dashedValue(in arguments: [String]) -> (value: String, place: Int)? {
        let options = Array(arguments.prefix { $0 != "--" })
        return options.indices.first { index in
            let argument = options[index]
            // Not one that `--name`, `--label` or `--at` took as its value (they take whatever comes next).
            return argument.count > 1 && argument.hasPrefix("-") && !argument.hasPrefix("--") && argument != "-h"
                && !(index > 0 && Self.takesAnyValue.contains(options[index - 1]))
        }.map { (options[$0], $0) }
    }

    /// The options that take the next argument whatever it starts with (`parsing: .unconditional`).
    static let takesAnyValue: Set<String> = ["--name", "--label", "--at"]
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}

/// Writes `peoplekeeper: message` to stderr. A stderr that cannot be written (closed, a full disk) is
/// ignored: the exit status still says what happened (Foundation's `FileHandle.write` trapped there,
/// so every error exited 132 instead of its status).
func complain(_ message: String) {
    _ = writeAll(Array("peoplekeeper: \(message)\n".utf8), to: STDERR_FILENO)
}

/// Writes all of `bytes` to `descriptor` with write(2) (Foundation's `FileHandle.write` traps on a
/// failed write); the errno of a write that failed, else nil.
func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Int32? {
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { return written < 0 ? errno : EIO }
        offset += written
    }
    return nil
}

/// `errno` of a failed write to stdout: quiet exit 0 for a broken pipe, else a message and exit 74.
func outputFailed(_ error: Int32) -> Never {
    if error == EPIPE { Foundation.exit(0) }
    complain("cannot write the output: " + String(cString: strerror(error)))
    Foundation.exit(74)
}

/// The options every scriptable command takes.
struct CommonOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The hub, ws://host:port or wss://host:port (default: $PEOPLEKEEPER_URL, else ws://127.0.0.1:8080).", valueName: "url"))
    var url: String?

    @Option(name: .customLong("ca-file"), help: ArgumentHelp("PEM certificates to trust for wss:// instead of the system's, e.g. a hub's self-signed certificate (default: $PEOPLEKEEPER_CA_FILE).", valueName: "file"))
    var caFile: String?

    @Option(help: ArgumentHelp("The room (default: $PEOPLEKEEPER_ROOM).", valueName: "room"))
    var room: String?

    @Option(help: ArgumentHelp("Who you are: undo and redo work on this user's changes (default: $PEOPLEKEEPER_USER, else $USER).", valueName: "name"))
    var user: String?

    @Option(help: ArgumentHelp("An access token, for a hub with auth.mode token (default: $PEOPLEKEEPER_TOKEN).", valueName: "token"))
    var token: String?

    @Flag(help: "Machine output: JSON on stdout.")
    var json = false

    @Option(help: "Seconds to wait for the hub to connect and answer.")
    var timeout: Double = 10

    var hubURL: String { Defaults.url(url) }
    var roomName: String { get throws { try Defaults.room(room) } }
    var userName: String { Defaults.user(user) }
    var accessToken: String? { Defaults.token(token) }
    var trustedCAFile: String? { Defaults.caFile(caFile) }

    func validate() throws {
        try Defaults.validate(url: url, user: user)
        guard timeout > 0 else { throw ValidationError("--timeout must be more than 0") }
    }
}

/// Where options come from when they are not given: the environment, then a default.
enum Defaults {
    static func url(_ given: String?) -> String { urlSource(given).url }

    /// The hub's URL and what said so: `--url`, else PEOPLEKEEPER_URL when set and not empty (an empty
    /// one was refused as an invalid `--url`, as USER was), else the default.
    static func urlSource(_ given: String?) -> (url: String, source: String) {
        if let given { return (given, "--url") }
        if let url = variable("PEOPLEKEEPER_URL") { return (url, "PEOPLEKEEPER_URL") }
        return ("ws://127.0.0.1:8080", "--url")
    }

    static func room(_ given: String?) throws -> String {
        guard let room = given ?? variable("PEOPLEKEEPER_ROOM"), !room.isEmpty else {
            throw ValidationError("which room? Give --room ROOM (or set PEOPLEKEEPER_ROOM)")
        }
        do {
            return try RoomName(room).rawValue
        } catch {
            throw ValidationError(given == nil ? "PEOPLEKEEPER_ROOM: \(error.description)" : error.description)
        }
    }

    static func user(_ given: String?) -> String { userSource(given).name }

    /// Who the user is and what said so: `--user`, else the first of PEOPLEKEEPER_USER and USER that is
    /// set and not empty, else `anonymous` (nil: the default). An empty variable counts as unset
    /// (`USER= peoplekeeper …` was refused as an invalid `--user`, given by nobody).
    static func userSource(_ given: String?) -> (name: String, source: String?) {
        if let given { return (given, "--user") }
        for name in ["PEOPLEKEEPER_USER", "USER"] {
            if let user = variable(name) { return (user, name) }
        }
        return ("anonymous", nil)
    }

    static func token(_ given: String?) -> String? { given ?? variable("PEOPLEKEEPER_TOKEN") }

    static func caFile(_ given: String?) -> String? { given ?? variable("PEOPLEKEEPER_CA_FILE") }

    /// An environment variable's value, nil when unset or empty (an empty PEOPLEKEEPER_CA_FILE was
    /// read as a file named "", an empty PEOPLEKEEPER_TOKEN sent as a token).
    private static func variable(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `url`, `user`: the options as given (nil: not given); an invalid value is blamed on what gave it.
    static func validate(url given: String?, user: String?) throws {
        let (url, option) = urlSource(given)
        guard url.hasPrefix("ws://") || url.hasPrefix("wss://") else {
            throw ValidationError("\(option) must start with ws:// or wss:// (got \(url))")
        }
        // Said before any connection (a port out of range was "unreachable", exit 69; a query ended up
        // before the room's path).
        guard let parts = URLComponents(string: url), let host = parts.host, !host.isEmpty else {
            throw ValidationError("\(option) is not a URL of a hub (got \(url); e.g. ws://127.0.0.1:8080)")
        }
        if let port = parts.port, !(1...65_535).contains(port) {
            throw ValidationError("\(option): the port must be 1 to 65535 (got \(port))")
        }
        guard parts.query == nil, parts.fragment == nil else {
            throw ValidationError("\(option) takes no ?query or #fragment (got \(url))")
        }
        let (name, source) = userSource(user)
        do { _ = try UserName(name) } catch { throw ValidationError("\(source ?? "user"): \(error)") }
    }
}

/// A command's failure: the message for stderr (and, with --json, stdout) and the exit status.
struct Failure: Error {
    var status: Int32
    var code: String
    var message: String

    static func usage(_ message: String) -> Failure { Failure(status: 64, code: "usage", message: message) }
    static func noPerson(_ tag: Tag, room: String) -> Failure {
        Failure(status: 65, code: "no-such-person", message: "there is no person with tag \(tag) in room \(room)")
    }
    /// The hub answered with something that is not an answer to what was asked.
    static func badReply(_ reply: ServerMessage) -> Failure {
        Failure(status: 65, code: "bad-reply", message: "unexpected answer \(reply.json.text)")
    }

    init(status: Int32, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// `caFile`: the certificates trusted instead of the system's, if any (what a TLS failure advises).
    init(_ error: ClientError, caFile: String? = nil) {
        switch error {
        case .unreachable(let why) where why.contains("SSL") || why.contains("certificate"):
            // Who signed the certificate is the question only when that is what the check said.
            let unsigned = ["self-signed", "issuer"].contains { why.contains($0) }
            let advice = if let caFile, unsigned {
                "none of the certificates in \(caFile) signed it: give the file with the hub's own certificate or its CA's"
            } else if caFile != nil {
                "the hub's certificate must be valid now and name the host in the URL"
            } else {
                "a hub whose certificate is self-signed or from a private CA: pass --ca-file, or set PEOPLEKEEPER_CA_FILE"
            }
            self.init(status: 69, code: "unreachable", message: "cannot reach the hub over TLS: \(why) (\(advice))")
        case .unreachable(let why): self.init(status: 69, code: "unreachable", message: "cannot reach the hub: \(why)")
        case .timedOut(let what): self.init(status: 69, code: "timeout", message: "no answer from the hub: \(what)")
        case .roomDeleted(let room):
            self.init(status: 66, code: "room-deleted", message: "an admin deleted room \(room)")
        case .refused(let error):
            let status: Int32 = switch error.code {
            case .invalidOp, .badMessage, .badJSON, .notHello, .tooLarge, .unsupportedProtocol, .noEntry, .noRoom: 65
            case .forbidden, .unauthorized: 77
            case .rateLimited, .roomFull, .serverError, .staleBase: 75
            }
            self.init(status: status, code: error.code.rawValue, message: error.terminalWords)
        }
    }
}

/// One run of a scriptable command: the lws client, the joined room, and the output.
struct Run {
    let options: CommonOptions

    /// Joins the room, runs `body`, and turns failures into the documented exit statuses.
    func callAsFunction(since: Int? = nil, _ body: (RoomSession) async throws -> Void) async throws {
        let client: WebSocketClient
        // `--timeout` bounds the join (RoomSession); lws's own limit (5 s by default) would cut a longer one.
        let handshakeSeconds = Int(min(options.timeout, 86_400).rounded(.up)) + 1
        do { client = try WebSocketClient(caFile: options.trustedCAFile, handshakeSeconds: handshakeSeconds) } catch {
            try fail(Failure(status: 69, code: "unreachable", message: "cannot start the WebSocket client: \(error)"))
        }
        var failure: Failure?
        do {
            let session = try await RoomSession.join(base: options.hubURL, room: options.roomName, user: options.userName,
                                                     token: options.accessToken, client: client, timeout: options.timeout,
                                                     since: since)
            do { try await body(session) } catch let error as Failure { failure = error } catch let error as ClientError {
                failure = Failure(error, caFile: options.trustedCAFile)
            }
            session.close()
        } catch let error as ClientError {
            failure = Failure(error, caFile: options.trustedCAFile)
        }
        await client.shutdown()
        if let failure { try fail(failure) }
    }

    func fail(_ failure: Failure) throws -> Never {
        if options.json {
            output(JSON.object(["error": JSON.object(["code": .string(failure.code), "message": .string(failure.message)])]).text)
        }
        complain(TerminalText.escaped(failure.message))
        throw ExitCode(failure.status)
    }

    /// The person with `tag`, or the failure for a missing one.
    func person(_ tag: Tag, in session: RoomSession) throws -> Person {
        guard let person = session.people[tag] else { throw Failure.noPerson(tag, room: session.room) }
        return person
    }
}
