import PeopleCore

extension ProtocolError {
    /// The hub's refusal as the terminal client says it: the hub's own sentence, except where it names
    /// a wire field a terminal user cannot set (`hello.token`): then the flag and the variable that do.
    public var terminalWords: String {
        if code == .unauthorized, message.contains("hello.token") {
            return "this hub needs an access token: pass --token, or set PEOPLEKEEPER_TOKEN (peoplekeeper-hub token mints one)"
        }
        if code == .unauthorized, message.contains("expired") {
            // Said at hello, or by the hub ending an open session at the token's exp.
            return "your access token has expired: open the room again with a new one (--token or PEOPLEKEEPER_TOKEN)"
        }
        return message
    }
}
