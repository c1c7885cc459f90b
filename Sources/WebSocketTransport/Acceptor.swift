import Foundation
import CLibWebSockets
import Synchronization

/// The listening socket of a server with several service threads, and the thread that accepts on it.
///
/// Each accepted socket goes to the next service thread in turn (`deal`), which adopts it into its
/// own lws context. (Several lws contexts cannot share the port: lws 4.1.6 sets SO_REUSEPORT only for
/// a context with several threads, which Debian's build cannot have. Letting the first context's lws
/// listener accept and hand sockets over from its network filter callback throttles accepting to one
/// socket per service round for every socket handed over, and under a burst of connections the
/// listen backlog overflowed.) Accepting blocks here, off every service thread, and drains the
/// backlog as fast as connections come.
final class Acceptor: @unchecked Sendable {
    /// The port listened on (the kernel's pick for 0).
    let port: Int
    private let fd: Int32
    private let stopping = Atomic<Bool>(false)
    private let thread = JoinableThread()

    /// Binds and listens (SO_REUSEADDR, as lws does: connections in TIME_WAIT do not hold the port).
    /// `host` as the server's: "", "*" and "::" are every address (IPv6 and IPv4), "0.0.0.0" every
    /// IPv4 address, anything else that address (or name).
    init(host: String, port: Int) throws {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        let everywhere = ["", "*", "::"].contains(host)
        if everywhere { hints.ai_family = AF_INET6 } else if host == "0.0.0.0" { hints.ai_family = AF_INET }
        var found: UnsafeMutablePointer<addrinfo>?
        let lookup = getaddrinfo(everywhere || host == "0.0.0.0" ? nil : host, String(port), &hints, &found)
        guard lookup == 0, let address = found else {
            throw WebSocketTransportError.startFailed("cannot listen on \(host):\(port): \(String(cString: gai_strerror(lookup)))")
        }
        defer { freeaddrinfo(found) }
        let fd = socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw WebSocketTransportError.startFailed("socket: \(String(cString: strerror(errno)))") }
        var on: Int32 = 1, off: Int32 = 0
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        if everywhere { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size)) }
        guard bind(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0, listen(fd, SOMAXCONN) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw WebSocketTransportError.startFailed("cannot listen on \(host):\(port): \(reason) (is the port in use?)")
        }
        var bound = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let rawPort = bound.ss_family == sa_family_t(AF_INET6)
            ? withUnsafePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port } }
            : withUnsafePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port } }
        self.port = Int(UInt16(bigEndian: rawPort))
        self.fd = fd
    }

    /// Starts the accepting thread; each socket (non-blocking) goes to `deal`, which owns it from then.
    /// Throws if the thread cannot be made (a process out of threads: Foundation's `Thread` failed
    /// without a word there, and a hub said `listening` and never accepted a connection).
    func start(deal: @escaping @Sendable (Int32) -> Void) throws {
        try thread.start(name: "lws-accept", stackSize: 1 << 18) { [self] in
            while !stopping.load(ordering: .acquiring) {
                let accepted = accept(fd, nil, nil)
                if accepted >= 0 {
                    _ = fcntl(accepted, F_SETFD, FD_CLOEXEC)
                    _ = fcntl(accepted, F_SETFL, fcntl(accepted, F_GETFL) | O_NONBLOCK)
                    var on: Int32 = 1
                    setsockopt(accepted, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
                    deal(accepted)
                    continue
                }
                switch errno {
                case EINTR, ECONNABORTED, EPROTO, EAGAIN:
                    continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // Out of descriptors: leave the backlog waiting a moment rather than spin.
                    usleep(10_000)
                default:
                    // The socket was shut down (stop), or cannot be used any more.
                    if !stopping.load(ordering: .acquiring) { usleep(10_000) }
                }
            }
        }
    }

    /// Stops accepting (new connections are refused) and waits for the thread; the listening socket is
    /// closed.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdown(fd, Int32(SHUT_RDWR))  // wakes the blocked accept
        thread.join()  // at once if it never started
        close(fd)
    }
}
