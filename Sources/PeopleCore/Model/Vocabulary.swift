/// A closed, ordered vocabulary of protocol version 1.
///
/// Cases are declared in vocabulary order (the order PROTOCOL.md lists them); sets are always
/// sent in that order, so `Comparable` follows declaration order.
public protocol Vocabulary: RawRepresentable, CaseIterable, Hashable, Sendable, Comparable
where RawValue == String, AllCases == [Self] {
    /// The wire name of the vocabulary, used in error messages ("hairColor").
    static var vocabularyName: String { get }
}

extension Vocabulary {
    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

public enum HairColor: String, Vocabulary {
    case black, brown, blonde, red, gray, white
    public static let vocabularyName = "hairColor"
}

public enum HairLength: String, Vocabulary {
    case bald, short, medium, long
    public static let vocabularyName = "hairLength"
}

public enum EyeColor: String, Vocabulary {
    case black, brown, blue, green, gray, hazel
    public static let vocabularyName = "eyeColor"
}

public enum FacialHairStyle: String, Vocabulary {
    case mustache, beard, goatee, sideburns, stubble
    public static let vocabularyName = "facialHair"
}

public enum Topic: String, Vocabulary {
    case sports, music, movies, books, travel, food, art, weather, politics, technology
    public static let vocabularyName = "topic"
}

/// The value of one topic's register: a topic is liked, disliked or neither, never both.
public enum Opinion: String, Vocabulary {
    case like, dislike, none
    public static let vocabularyName = "preference"
}
