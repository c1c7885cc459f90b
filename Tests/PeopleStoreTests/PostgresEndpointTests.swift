import Foundation
import PeopleStorePostgres
import Testing

/// `storage.postgresURL` as libpq reads it: which modes encrypt, which check the server's certificate
/// against which roots, and what is refused. (test_postgres_tls.py shows each against a real server.)
@Suite("PostgreSQL URL and TLS modes")
struct PostgresEndpointTests {
    @Test("the URL's parts, the default mode prefer, and a password from a file winning over the URL's")
    func parts() throws {
        let endpoint = try PostgresEndpoint(url: "postgresql://pk:secret@db.example:6543/people")
        #expect(endpoint.host == "db.example" && endpoint.port == 6543 && endpoint.user == "pk")
        #expect(endpoint.database == "people" && endpoint.password == "secret")
        #expect(endpoint.tlsMode == .prefer && endpoint.roots == nil && endpoint.clientCertificate == nil)
        #expect(try PostgresEndpoint(url: "postgres://pk:secret@db/people", password: "filed").password == "filed")
        #expect(!endpoint.display.contains("secret"))
    }

    @Test("which roots each mode checks the server's certificate against", arguments: [
        ("sslmode=disable", PostgresEndpoint.TLSMode.disable, nil),
        ("sslmode=prefer", .prefer, nil),
        ("sslmode=require", .require, nil),
        ("sslmode=require&sslrootcert=/etc/ssl/certs/ca-certificates.crt", .require, PostgresEndpoint.Roots.file("/etc/ssl/certs/ca-certificates.crt")),
        ("sslmode=verify-ca", .verifyCA, .system),
        ("sslmode=verify-full", .verifyFull, .system),
        ("sslmode=verify-full&sslrootcert=system", .verifyFull, .system),
        ("sslmode=verify-ca&sslrootcert=/etc/ssl/certs/ca-certificates.crt", .verifyCA, .file("/etc/ssl/certs/ca-certificates.crt")),
    ] as [(String, PostgresEndpoint.TLSMode, PostgresEndpoint.Roots?)])
    func modes(query: String, mode: PostgresEndpoint.TLSMode, roots: PostgresEndpoint.Roots?) throws {
        let endpoint = try PostgresEndpoint(url: "postgres://pk@db/people?\(query)")
        #expect(endpoint.tlsMode == mode)
        #expect(endpoint.roots == roots)
        #expect(endpoint.configuration.tls.isAllowed == (mode != .disable))
        #expect(endpoint.configuration.tls.isEnforced == (mode != .disable && mode != .prefer))
    }

    @Test("what is refused, each with a sentence naming the part", arguments: [
        ("mysql://pk@db/people", "must look like postgres://"),
        ("postgres:///people", "must look like postgres://"),
        ("postgres://pk:hunter2@/people", "postgres://pk:***@/people"),
        ("postgres://pk@db/people?sslmode=allow", "sslmode allow is not one of disable, prefer, require, verify-ca, verify-full"),
        ("postgres://pk@db/people?sslmode=VERIFY-FULL", "sslmode VERIFY-FULL is not one of"),
        ("postgres://pk@db/people?connect_timeout=5", "the parameter connect_timeout is not supported"),
        ("postgres://pk@db/people?sslmode=require&sslmode=require", "sslmode is given twice"),
        ("postgres://pk@db/people?sslrootcert=/etc/ssl/certs/ca-certificates.crt", "sslrootcert is only read with sslmode require"),
        ("postgres://pk@db/people?sslmode=verify-full&sslrootcert=", "sslrootcert is empty"),
        ("postgres://pk@db/people?sslmode=verify-full&sslrootcert=/nonexistent", "sslrootcert /nonexistent cannot be read"),
        ("postgres://pk@db/people?sslmode=require&sslkey=/etc/hostname", "sslcert and sslkey go together"),
    ])
    func refused(url: String, words: String) {
        #expect {
            _ = try PostgresEndpoint(url: url)
        } throws: { error in
            "\(error)".contains(words) && !"\(error)".contains("hunter2")
        }
    }

    @Test("files that are not what their parameter needs are refused when the URL is read", arguments: [
        ("sslmode=verify-ca&sslrootcert=/etc/hostname", "sslrootcert /etc/hostname is not a PEM certificate file"),
        ("sslmode=require&sslcert=/etc/hostname&sslkey=/etc/hostname", "sslcert /etc/hostname is not a PEM certificate file"),
        ("sslmode=require&sslcert=/etc/ssl/certs/ca-certificates.crt&sslkey=/etc/hostname", "sslkey /etc/hostname is not an unencrypted PEM private key"),
    ])
    func badFiles(query: String, words: String) {
        #expect {
            _ = try PostgresEndpoint(url: "postgres://pk@db/people?\(query)")
        } throws: { error in
            "\(error)".contains(words)
        }
    }
}
