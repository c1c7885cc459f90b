import PeopleCore

extension PersonBlame {
    // Who last wrote one part of the person. A part not written since the person was added (a style or
    // a topic the record does not list) holds what the insert gave it: its writer is `created`'s.

    public func writer(of field: Field) -> Writer {
        BlameField(rawValue: field.rawValue).flatMap { fields[$0] } ?? created
    }

    public func writer(of style: FacialHairStyle) -> Writer { facialHair[style] ?? created }

    public func writer(of topic: Topic) -> Writer { preference[topic] ?? created }

    /// Who last moved the person (or added them, if nobody has moved them since).
    public var positionWriter: Writer { fields[.position] ?? created }
}
