import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a small credentials file, with errors that name it.
enum CredentialFile {
    /// Far above any real cookie or netrc file; `/dev/zero` given by mistake stops here.
    static let maxBytes = 16 << 20

    /// The file's text.
    ///
    /// - Throws: ``SwoopError`` (file system) naming what and where, with the system's reason; (invalid
    ///   argument) when it is not UTF-8 or is larger than ``maxBytes``.
    static func readText(_ path: String, what: String) throws -> String {
        let path = (path as NSString).expandingTildeInPath
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SwoopError.fileSystem("read \(what)", path: path, errno: errno) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                throw SwoopError.fileSystem("read \(what)", path: path, errno: errno)
            }
            bytes += buffer[0..<n]
            guard bytes.count <= maxBytes else {
                throw SwoopError(.invalidArgument, "\(what) \(path) is larger than \(maxBytes >> 20) MiB")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw SwoopError(.invalidArgument, "\(what) \(path) is not UTF-8 text")
        }
        return text
    }
}
