import Foundation
import JWTKit
import PeopleCore

/// What an access token says: who (`sub`), until when (`exp`), which rooms (`rooms`: patterns where
/// `*` matches any run of characters and `?` one), and as what (`role`: `viewer`, `editor`, or
/// `admin`: an editor who may also use the HTTP API's admin routes). `iss` and `aud` count when the
/// hub names its issuer and audience (`auth.issuer`, `auth.audience`).
public struct AccessClaims: JWTPayload, Equatable {
    public var sub: SubjectClaim
    public var exp: ExpirationClaim
    public var rooms: [String]
    public var role: String
    /// Not valid before this time, when the issuer says so.
    public var nbf: NotBeforeClaim?
    /// Who issued it (checked against `auth.issuer` when that is set).
    public var iss: IssuerClaim?
    /// Whom it is for: one name or several (RFC 7519; checked against `auth.audience` when set).
    public var aud: AudienceClaim?

    public init(user: String, rooms: [String], role: AccessRole, expires: Date, issuer: String? = nil,
                audience: String? = nil) {
        sub = SubjectClaim(value: user)
        exp = ExpirationClaim(value: expires)
        self.rooms = rooms
        self.role = role.rawValue
        iss = issuer.map { IssuerClaim(value: $0) }
        aud = audience.map { AudienceClaim(value: [$0]) }
    }

    public var accessRole: AccessRole { AccessRole(rawValue: role) ?? .viewer }

    public func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
        if let nbf, nbf.value > Date() { throw AuthFailure("the token is not valid yet (nbf)") }
        guard AccessRole(rawValue: role) != nil else { throw AuthFailure("role \(role) is not viewer, editor or admin") }
        // The same rule as a hello's user (and `peoplekeeper-hub token --user`), so an HTTP caller
        // cannot author revisions under a name no other part of the product accepts.
        guard (try? UserName(sub.value)) != nil else { throw AuthFailure("the token's sub must be 1 to 64 bytes of UTF-8") }
    }
}

/// What a valid token grants for one room: the role, until when.
public struct TokenGrant: Equatable, Sendable {
    public var role: Role
    /// The token's `exp`: a session it opened ends then (`ConnectionMachine.expired(now:)`).
    public var expires: Date

    public init(role: Role, expires: Date) {
        self.role = role
        self.expires = expires
    }

    /// `expires` in milliseconds since 1970 (the hub's clock), clamped: an `exp` of 1e300 is valid JSON
    /// and a valid NumericDate, and converting it unclamped stopped the hub (found by a tester).
    public var expiresMilliseconds: Int64 { Self.milliseconds(expires) }

    /// A time as the hub's clock reads it (ms since 1970), clamped to Int64.
    static func milliseconds(_ date: Date) -> Int64 {
        let ms = (date.timeIntervalSince1970 * 1000).rounded(.down)
        if ms.isNaN { return 0 }
        return ms >= 9.2e18 ? .max : ms <= -9.2e18 ? .min : Int64(ms)
    }
}

/// Why a token was refused (the message goes into the `unauthorized` error).
public struct AuthFailure: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Checks and mints HS256 access tokens with one shared secret (`auth.mode: token`).
public final class TokenAuthority: Sendable {
    private let keys: JWTKeyCollection
    /// When set, a token's `iss` must be this, and the tokens minted here say so.
    public let issuer: String?
    /// When set, a token's `aud` must name this, and the tokens minted here say so.
    public let audience: String?

    /// `secret`: at least 32 bytes (an HS256 key shorter than its hash is weak). `issuer`, `audience`:
    /// nil or empty, not checked (any token signed with the secret counts).
    public init(secret: [UInt8], issuer: String? = nil, audience: String? = nil) async throws(AuthFailure) {
        guard secret.count >= 32 else {
            throw AuthFailure("the token secret is \(secret.count) bytes; it must be at least 32")
        }
        self.issuer = issuer?.isEmpty == false ? issuer : nil
        self.audience = audience?.isEmpty == false ? audience : nil
        keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
    }

    /// The role a token grants `user` in `room` and until when, or why not: a bad signature or format,
    /// an expired token, a room outside its patterns, or a user other than the one saying hello.
    public func check(_ token: String, user: String, room: String) async -> Result<TokenGrant, AuthFailure> {
        let claims: AccessClaims
        switch await verify(token) {
        case .success(let verified): claims = verified
        case .failure(let failure): return .failure(failure)
        }
        // Byte for byte: Swift's `==` is canonical equivalence, so a token for "josé" (NFC) let a hello
        // say "jose\u{301}" (NFD), and the room recorded bytes the token never named.
        guard claims.sub.value.utf8.elementsEqual(user.utf8) else {
            return .failure(AuthFailure("the token is for \(claims.sub.value), not \(user)"))
        }
        guard claims.rooms.contains(where: { Self.matches($0, room) }) else {
            return .failure(AuthFailure("the token does not give access to room \(room)"))
        }
        return .success(TokenGrant(role: claims.accessRole.roomRole, expires: claims.exp.value))
    }

    /// What a token says, if it is valid (signature, format, expiry, role).
    public func verify(_ token: String) async -> Result<AccessClaims, AuthFailure> {
        // HS256 only, as the header must say too (the key checks the signature whatever the header
        // claims); a header with `crit` names extensions this hub does not know (RFC 7515 4.1.11).
        if let header = Self.header(of: token) {
            guard let alg = header["alg"] as? String else {
                return .failure(AuthFailure("the token's header names no alg; this hub takes HS256 only"))
            }
            guard alg == "HS256" else {
                return .failure(AuthFailure("the token's header says alg \(alg); this hub takes HS256 only"))
            }
            guard header["crit"] == nil else {
                return .failure(AuthFailure("the token's header has crit: this hub knows no JWS extensions"))
            }
        }
        let claims: AccessClaims
        do {
            claims = try await keys.verify(token, as: AccessClaims.self)
        } catch let error as JWTError where error.errorType == .claimVerificationFailure {
            return .failure(AuthFailure("the token has expired"))
        } catch let error as AuthFailure {
            return .failure(error)
        } catch {
            return .failure(AuthFailure("the token is not valid (bad signature, format, or a claim of the wrong type)"))
        }
        // Byte for byte, as `sub`: the issuer and the audience are names, not text to fold.
        if let issuer, !(claims.iss.map { $0.value.utf8.elementsEqual(issuer.utf8) } ?? false) {
            return .failure(AuthFailure(claims.iss == nil ? "the token names no issuer (iss); this hub takes tokens from \(issuer)"
                                        : "the token's issuer (iss) is not \(issuer), the one this hub takes tokens from"))
        }
        if let audience, !(claims.aud?.value.contains { $0.utf8.elementsEqual(audience.utf8) } ?? false) {
            return .failure(AuthFailure("the token is not for this hub: its audience (aud) does not name \(audience)"))
        }
        return .success(claims)
    }

    /// A token's header as a JSON object (nil: none readable; the signature check then refuses it).
    static func header(of token: String) -> [String: Any]? {
        guard let header = token.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first else { return nil }
        var base64 = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return object
    }

    /// A token for `user` in the rooms matching `rooms`, as `role`, valid for `ttl` seconds (at most:
    /// `exp` is rounded down to a whole second, as other issuers write it).
    public func mint(user: String, rooms: [String], role: AccessRole, ttl: TimeInterval, now: Date = Date()) async throws -> String {
        let expires = Date(timeIntervalSince1970: now.addingTimeInterval(ttl).timeIntervalSince1970.rounded(.down))
        return try await keys.sign(AccessClaims(user: user, rooms: rooms, role: role, expires: expires,
                                                issuer: issuer, audience: audience))
    }

    /// Whether `room` matches `pattern` (`RoomPattern`).
    public static func matches(_ pattern: String, _ room: String) -> Bool {
        RoomPattern(pattern).matches(room)
    }
}
