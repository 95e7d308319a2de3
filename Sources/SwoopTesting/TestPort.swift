import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TCP port on 127.0.0.1 held by this process for as long as the value lives.
///
/// - ``listening`` is `false`: the port is bound but not listening, so a connection is refused
///   (`ECONNREFUSED`), and no other server can take the port meanwhile, as one could after a test
///   server's shutdown.
/// - ``listening`` is `true`: the kernel completes connections into the backlog and nothing ever
///   answers, for a server that accepts and stays silent.
public final class TestPort: Sendable {
    /// The port number.
    public let port: Int
    private let fd: Int32

    /// Binds a fresh port (port 0) on 127.0.0.1.
    public init(listening: Bool) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, !listening || listen(fd, 16) == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    deinit { close(fd) }
}
