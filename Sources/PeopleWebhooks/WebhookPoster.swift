import AsyncHTTPClient
import BuildIdentity
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// How one POST went, as the deliveries metric's `outcome` names it.
enum DeliveryOutcome: Sendable, Hashable {
    /// A 2xx within the timeout.
    case ok
    /// An answer, but not a 2xx.
    case httpError(status: Int)
    /// No whole answer within the timeout.
    case timeout
    /// No connection, or it broke before the answer.
    case connectError(String)

    var label: String {
        switch self {
        case .ok: "ok"
        case .httpError: "http_error"
        case .timeout: "timeout"
        case .connectError: "connect_error"
        }
    }

    var description: String {
        switch self {
        case .ok: "delivered"
        case .httpError(let status): "answered \(status)"
        case .timeout: "no answer within the timeout"
        case .connectError(let reason): "cannot connect: \(reason)"
        }
    }
}

extension WebhookPoster {
    /// A URL with a user (and password), as curl takes it: the URL without them, and the `Authorization:
    /// Basic` header they make (percent-decoded); a URL without a user as it is, with no header.
    static func basicAuthentication(of url: String) -> (url: String, authorization: String?) {
        guard var parts = URLComponents(string: url), let user = parts.user else { return (url, nil) }
        let credentials = "\(user):\(parts.password ?? "")"
        parts.user = nil
        parts.password = nil
        guard let bare = parts.string else { return (url, nil) }
        return (bare, "Basic " + Data(credentials.utf8).base64EncodedString())
    }
}

/// Sends webhook POSTs with AsyncHTTPClient on an event loop of its own (one thread), never the lws
/// service thread. Redirects are not followed (a 3xx is a failure). Each endpoint is its own host, so
/// its connections are its own: a slow endpoint holds only its own.
final class WebhookPoster: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let client: HTTPClient

    init() {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.httpVersion = .http1Only
        // A refused connection is a failed delivery now (retried with the lane's backoff), not a
        // connection the pool keeps retrying until the 10 s deadline while the state still says ok.
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroup: group, configuration: configuration)
    }

    /// POSTs `body` to `url`; the whole exchange (connect, answer, its body) must fit in `timeout`
    /// milliseconds.
    func post(url: String, body: [UInt8], signature: String, timeout: Int64) async -> DeliveryOutcome {
        let (target, authorization) = Self.basicAuthentication(of: url)
        var request = HTTPClientRequest(url: target)
        request.method = .POST
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "PeopleKeeper-Signature", value: signature)
        request.headers.add(name: "User-Agent", value: "PeopleKeeper-Webhooks/\(BuildIdentity.release)")
        request.body = .bytes(ByteBuffer(bytes: body))
        let (client, prepared) = (self.client, request)
        let deadline = NIODeadline.now() + .milliseconds(timeout)
        return await withTaskGroup(of: DeliveryOutcome?.self) { group in
            group.addTask {
                do {
                    let response = try await client.execute(prepared, deadline: deadline)
                    // The status is what counts: the answer's body is read (to keep the connection
                    // reusable) up to 1 MiB, and beyond that left unread (the connection is dropped).
                    var read = 0
                    for try await chunk in response.body {
                        read += chunk.readableBytes
                        if read > 1 << 20 { break }
                    }
                    let status = Int(response.status.code)
                    return (200..<300).contains(status) ? .ok : .httpError(status: status)
                } catch {
                    return Task.isCancelled ? nil : Self.outcome(of: error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(timeout))
                return Task.isCancelled ? nil : .timeout
            }
            var outcome: DeliveryOutcome = .timeout
            for await result in group {
                if let result {
                    outcome = result
                    break
                }
            }
            group.cancelAll()
            return outcome
        }
    }

    private static func outcome(of error: any Error) -> DeliveryOutcome {
        if let error = error as? HTTPClientError,
           [.deadlineExceeded, .readTimeout, .writeTimeout, .cancelled].contains(error) {
            return .timeout
        }
        return .connectError(describe(error))
    }

    /// An error in words for `lastError` and the log: the system's sentence for a socket error
    /// (`connection refused`), not NIO's layered description (an operator's pass read `connection reset
    /// (error set): Connection refused) (errno: 111)`).
    static func describe(_ error: any Error) -> String {
        if let io = error as? IOError {
            var text = [CChar](repeating: 0, count: 256)
            // The XSI strerror_r (as Swift imports glibc's): the sentence into `text`; thread-safe.
            let sentence = text.withUnsafeMutableBufferPointer { buffer -> String in
                guard let base = buffer.baseAddress, strerror_r(io.errnoCode, base, buffer.count) == 0 else { return "error" }
                return String(cString: base)
            }
            return sentence.lowercased() + " (errno \(io.errnoCode))"
        }
        if let connect = error as? NIOConnectionError {
            if let first = connect.connectionErrors.first { return describe(first.error) }
            if let dns = connect.dnsAError ?? connect.dnsAAAAError { return "cannot resolve \(connect.host): \(dns)" }
        }
        return "\(error)"
    }

    /// Closes the connections and stops the event loop.
    func shutdown() async {
        try? await client.shutdown()
        try? await group.shutdownGracefully()
    }
}
