import Foundation
import NIOSSL
import PostgresNIO

/// Where the cluster store's database is and how to reach it safely, read from a libpq-style URL:
/// `postgres://user[:password]@host[:port]/database[?sslmode=…&sslrootcert=…&sslcert=…&sslkey=…]`.
///
/// TLS follows libpq's `sslmode`, so a URL an operator already uses with `psql` means the same here:
///
/// | `sslmode` | encrypted | the server's certificate |
/// |---|---|---|
/// | `disable` | never | — |
/// | `prefer` (the default, as libpq's) | if the server offers TLS | not checked |
/// | `require` | always, or the connection fails | not checked; checked against `sslrootcert` if one is given (as libpq) |
/// | `verify-ca` | always | signed by a root of `sslrootcert` |
/// | `verify-full` | always | signed by a root of `sslrootcert`, and names the host (or its IP address) |
///
/// `sslrootcert` is a PEM file of trusted roots, or `system` for the system's own (also what
/// `verify-ca` / `verify-full` trust when it is left out). `sslcert` + `sslkey` (PEM, both or neither)
/// are a client certificate for servers that ask for one. Any other parameter is refused rather than
/// silently ignored, and so is libpq's `allow` (plain first, TLS only if refused), which postgres-nio
/// cannot do: a setting that looks like security and does nothing is worse than an error.
public struct PostgresEndpoint: Sendable {
    public enum TLSMode: String, Sendable, CaseIterable {
        case disable, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    /// Trusted roots for the server's certificate.
    public enum Roots: Sendable, Equatable {
        case system
        case file(String)
    }

    /// What is wrong with a URL, in a sentence that names the part.
    public struct Problem: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String?
    public let tlsMode: TLSMode
    /// The roots the server's certificate is checked against; nil when it is not checked.
    public let roots: Roots?
    public let clientCertificate: (certificate: String, key: String)?
    private let tls: PostgresConnection.Configuration.TLS

    public static let parameters = ["sslmode", "sslrootcert", "sslcert", "sslkey"]

    /// Reads `url`; a `password` given apart (from a file) wins over the URL's. Files named by the
    /// URL are checked for readability here, so a typo is a start-up error, not a failed connection.
    public init(url: String, password: String? = nil) throws(Problem) {
        guard let parts = URLComponents(string: url), ["postgres", "postgresql"].contains(parts.scheme ?? ""),
              let host = parts.host, !host.isEmpty else {
            throw Problem(description: "must look like postgres://user@host:5432/database, not \(Self.redacted(url))")
        }
        self.host = host
        port = parts.port ?? 5432
        user = parts.user ?? "postgres"
        self.password = password ?? parts.password
        let name = String(parts.path.drop(while: { $0 == "/" }))
        database = name.isEmpty ? nil : name

        var query: [String: String] = [:]
        for item in parts.queryItems ?? [] {
            guard Self.parameters.contains(item.name) else {
                throw Problem(description: "the parameter \(item.name) is not supported (\(Self.parameters.joined(separator: ", ")) are)")
            }
            guard query[item.name] == nil else { throw Problem(description: "\(item.name) is given twice") }
            query[item.name] = item.value ?? ""
        }
        let modes = TLSMode.allCases.map(\.rawValue).joined(separator: ", ")
        if let mode = query["sslmode"] {
            guard let known = TLSMode(rawValue: mode) else {
                throw Problem(description: "sslmode \(mode.isEmpty ? "(empty)" : mode) is not one of \(modes)")
            }
            tlsMode = known
        } else {
            tlsMode = .prefer
        }

        let rootFile = query["sslrootcert"]
        switch (tlsMode, rootFile) {
        case (.disable, .some), (.prefer, .some):
            throw Problem(description: "sslrootcert is only read with sslmode require, verify-ca or verify-full (here \(tlsMode.rawValue): the certificate would not be checked)")
        case (.disable, nil), (.prefer, nil), (.require, nil):
            roots = nil
        case (_, "system"?), (.verifyCA, nil), (.verifyFull, nil):
            roots = .system
        case (_, let path?):
            try Self.readable(path, "sslrootcert")
            roots = .file(path)
        }

        switch (query["sslcert"], query["sslkey"]) {
        case (nil, nil):
            clientCertificate = nil
        case (let certificate?, let key?):
            guard tlsMode != .disable else { throw Problem(description: "sslcert and sslkey need TLS, but sslmode is disable") }
            try Self.readable(certificate, "sslcert")
            try Self.readable(key, "sslkey")
            clientCertificate = (certificate, key)
        default:
            throw Problem(description: "sslcert and sslkey go together (a client certificate and its key)")
        }
        tls = try Self.makeTLS(mode: tlsMode, roots: roots, client: clientCertificate)
    }

    /// The URL as it may be logged: no password.
    public var display: String {
        "postgres://\(user)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database ?? "") (sslmode \(tlsMode.rawValue))"
    }

    /// postgres-nio's configuration for a connection to this endpoint.
    public var configuration: PostgresConnection.Configuration {
        PostgresConnection.Configuration(host: host, port: port, username: user, password: password,
                                         database: database, tls: tls)
    }

    /// The same without TLS: `prefer`'s second try, as libpq's, when the server refused this user over TLS.
    public var plainConfiguration: PostgresConnection.Configuration? {
        guard tlsMode == .prefer else { return nil }
        var plain = configuration
        plain.tls = .disable
        return plain
    }

    /// The TLS set-up the mode asks for, with every file read now (a bad one is a `Problem` at start).
    private static func makeTLS(mode: TLSMode, roots: Roots?, client: (certificate: String, key: String)?)
        throws(Problem) -> PostgresConnection.Configuration.TLS {
        guard mode != .disable else { return .disable }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = switch (mode, roots) {
        case (_, nil): .none
        case (.verifyFull, _): .fullVerification
        default: .noHostnameVerification
        }
        switch roots {
        case .file(let path)?:
            let certificates = try loaded("sslrootcert", path) { try NIOSSLCertificate.fromPEMFile(path) }
            guard !certificates.isEmpty else { throw Problem(description: "sslrootcert \(path) holds no PEM certificate") }
            configuration.trustRoots = .certificates(certificates)
        case .system?:
            configuration.trustRoots = .default
        case nil:
            break
        }
        if let (certificate, key) = client {
            let chain = try loaded("sslcert", certificate) { try NIOSSLCertificate.fromPEMFile(certificate) }
            guard !chain.isEmpty else { throw Problem(description: "sslcert \(certificate) holds no PEM certificate") }
            configuration.certificateChain = chain.map { .certificate($0) }
            configuration.privateKey = .privateKey(try loaded("sslkey", key) { try NIOSSLPrivateKey(file: key, format: .pem) })
        }
        do {
            let context = try NIOSSLContext(configuration: configuration)
            return mode == .prefer ? .prefer(context) : .require(context)
        } catch NIOSSLError.failedToLoadPrivateKey where client != nil {
            throw Problem(description: "sslkey \(client!.key) is not the private key of sslcert \(client!.certificate)")
        } catch {
            throw Problem(description: "cannot set up TLS with sslrootcert, sslcert and sslkey as given: \(error)")
        }
    }

    private static func loaded<T>(_ name: String, _ path: String, _ body: () throws -> T) throws(Problem) -> T {
        do { return try body() } catch {
            throw Problem(description: "\(name) \(path) is not \(name == "sslkey" ? "an unencrypted PEM private key" : "a PEM certificate file")")
        }
    }

    /// A plain sentence for an error of connecting that TLS caused, or nil for any other error.
    public func explainTLS(_ error: any Error) -> String? {
        guard let error = error as? PSQLError else { return nil }
        if error.code == .sslUnsupported {
            return "the server does not offer TLS, and sslmode \(tlsMode.rawValue) needs it (prefer falls back to plain text)"
        }
        guard let underlying = error.underlying else { return nil }
        let trusted = switch roots {
        case .file(let path)?: "a root in sslrootcert \(path)"
        default: "a root the system trusts (name one with sslrootcert)"
        }
        if let extra = underlying as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return "the server's certificate is for another name than \(host) (sslmode verify-full checks the name; verify-ca only the signer)"
        }
        let text = "\(underlying)"
        if text.contains("ALERT_UNKNOWN_CA") || text.contains("ALERT_CERTIFICATE_REQUIRED")
            || text.contains("ALERT_BAD_CERTIFICATE") || text.contains("ALERT_ACCESS_DENIED") {
            return clientCertificate.map { "the server does not accept the client certificate in sslcert \($0.certificate) (not signed by a root it trusts?)" }
                ?? "the server wants a client certificate: give sslcert and sslkey"
        }
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            return "the server's certificate is not signed by \(trusted), or has expired"
        }
        if underlying is NIOSSLError || underlying is BoringSSLError || text.contains("handshakeFailed") {
            return "the TLS handshake failed: \(underlying)"
        }
        return nil
    }

    private static func readable(_ path: String, _ name: String) throws(Problem) {
        guard !path.isEmpty else { throw Problem(description: "\(name) is empty") }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw Problem(description: "\(name) \(path) cannot be read")
        }
    }

    /// `url` with its password, if any, replaced by `***`.
    static func redacted(_ url: String) -> String {
        guard var parts = URLComponents(string: url), parts.password != nil else { return url }
        parts.password = "***"
        return parts.string ?? url
    }
}

extension PostgresEndpoint.Roots {
    var nio: NIOSSLTrustRoots {
        switch self {
        case .system: .default
        case .file(let path): .file(path)
        }
    }
}
