/// Close reasons the hub sends that a client acts on, beside their code (PROTOCOL.md, "Close codes").
public enum CloseReason {
    /// With 1000: an admin deleted the room (`DELETE /v1/rooms/NAME`). This project's clients stop
    /// rather than reconnect, whose hello would make the room again from the seed.
    public static let roomDeleted = "room deleted"
}
