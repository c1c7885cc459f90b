import ArgumentParser
import Foundation
import PeopleCore
import PeopleHub

/// `peoplekeeper-hub token`: mints an access token for `auth.mode: token`.
struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mint an access token (HS256 JWT) for a user, rooms and a role.",
        discussion: """
            The secret is the hub's: PEOPLEKEEPER_AUTH_SECRET, or the file auth.secretFile of the config. \
            The token goes to stdout; give it to the client (hello.token; peoplekeeper --token; the web \
            page's token field).

            Examples:
              peoplekeeper-hub token --user ann --room 'team-*' --role editor --ttl 86400
              peoplekeeper-hub token --user guest --room demo --role viewer --ttl 3600
            """)

    @Option(name: .long, help: "The YAML config file (for auth.secretFile).")
    var config: String = "Config/peoplekeeper.yaml"

    @Option(help: "The user (the token's sub; the hello's user must be the same).") var user: String

    @Option(help: "A room, or a pattern with * and ? (repeat for several).") var room: [String]

    @Option(help: "viewer, editor or admin (a viewer sees everything and may not edit, undo or redo; an admin is an editor who may also use the HTTP API's admin routes).") var role: String = "editor"

    /// Read as text, and whatever follows `--ttl` is its value (even `-5`, which ArgumentParser would
    /// otherwise take for an option and answer "Missing value"), so `validate` can say what is wrong.
    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds until it expires: a whole number from 1 to 3153600000 (a hundred years).", valueName: "seconds"))
    var ttl: String = "86400"

    static let maxTTL = 3_153_600_000

    /// `ttl` as seconds, once `validate` has passed.
    var seconds: Int { Int(ttl)! }

    func validate() throws {
        guard AccessRole(rawValue: role) != nil else { throw ValidationError("--role is viewer, editor or admin") }
        guard let seconds = Int(ttl), seconds > 0 else {
            throw ValidationError("--ttl must be a whole number of seconds above 0 (got \(ttl))")
        }
        // A hundred years: past that `exp` no longer prints as a whole number of seconds.
        guard seconds <= Self.maxTTL else {
            throw ValidationError("--ttl must be at most \(Self.maxTTL) seconds, a hundred years (got \(ttl))")
        }
        guard !room.isEmpty else { throw ValidationError("give at least one --room") }
        do { _ = try UserName(user) } catch { throw ValidationError("--user: \(error)") }
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let token: String
        do {
            let settings = try await HubSettings.load(file: config, flags: [:], environment: environment)
            let authority = try await settings.tokenAuthority(environment: environment)
            token = try await authority.mint(user: user, rooms: room, role: AccessRole(rawValue: role)!, ttl: TimeInterval(seconds))
        } catch {
            writeStandardError(line: "peoplekeeper-hub token: \(error)")
            throw ExitCode(78)
        }
        try output(token)
    }
}
