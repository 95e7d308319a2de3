import Foundation
import SwoopKit

/// The RPC secret: given (`--secret`, `--secret-file`), or made at the first start and kept in the
/// state directory (`rpc-secret`, mode 0600) so that it survives restarts and only its user reads it.
public enum DaemonSecret {
    public static let fileName = "rpc-secret"

    /// The secret to use, and whether it was made now (to be shown once).
    ///
    /// - Throws: ``DaemonError`` for an empty secret or a file that cannot be read or written.
    public static func resolve(given: String?, file: String?, stateDirectory: String) throws -> (secret: String, isNew: Bool) {
        if let given {
            guard !given.isEmpty else { throw DaemonError("--secret: the secret is empty") }
            return (given, false)
        }
        if let file {
            guard let secret = read(file) else { throw DaemonError("--secret-file \(file): cannot read it") }
            guard !secret.isEmpty else { throw DaemonError("--secret-file \(file): the file is empty") }
            return (secret, false)
        }
        let path = stateDirectory + "/" + fileName
        if let secret = read(path), !secret.isEmpty { return (secret, false) }
        let secret = make()
        try PrivateFile.write(Array((secret + "\n").utf8), to: path)
        return (secret, true)
    }

    /// A secret file's text without surrounding blanks, or `nil` when it cannot be read.
    private static func read(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map {
            String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// 24 random bytes as 48 hex digits.
    public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<3).map { _ in Download.ID(gid: generator.next()).rawValue }.joined()
    }
}

/// Writing a file only its user may read: made with mode 0600 (never readable by others, not even
/// for a moment), written whole, flushed and renamed into place.
public enum PrivateFile {
    public static func write(_ bytes: [UInt8], to path: String) throws {
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw DaemonError("cannot write \(path): \(String(cString: strerror(errno)))") }
        if let failure = bytes.withUnsafeBytes({ WriteAll.write(fd, $0) }) {
            close(fd)
            unlink(temporary)
            throw DaemonError("cannot write \(path): \(String(cString: strerror(failure)))")
        }
        fsync(fd)
        close(fd)
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw DaemonError("cannot write \(path): \(reason)")
        }
    }
}
