import Crypto
import Foundation

/// An expected digest of the finished file.
public struct Checksum: Sendable, Hashable, CustomStringConvertible {
    /// A digest algorithm.
    public enum Algorithm: String, Sendable, Hashable, CaseIterable {
        case sha256 = "sha-256"
        case sha1 = "sha-1"
        case md5 = "md5"

        var hexLength: Int {
            switch self {
            case .sha256: return 64
            case .sha1: return 40
            case .md5: return 32
            }
        }
    }

    public var algorithm: Algorithm
    /// The expected digest in lower-case hex.
    public var hex: String

    /// Parses `ALGORITHM=HEX`, as in `sha-256=9f86…` (also `sha256`, `sha1`, `md5`).
    ///
    /// - Throws: ``SwoopError/Code/invalidArgument`` naming what is wrong.
    public init(parsing text: String) throws {
        guard let equals = text.firstIndex(of: "=") else {
            throw SwoopError(.invalidArgument, "invalid checksum '\(text)': expected ALGORITHM=HEX, e.g. sha-256=…")
        }
        let name = text[..<equals].lowercased().replacingOccurrences(of: "-", with: "")
        let hex = text[text.index(after: equals)...].lowercased()
        guard let algorithm = Algorithm.allCases.first(where: { $0.rawValue.replacingOccurrences(of: "-", with: "") == name })
        else {
            throw SwoopError(.invalidArgument, "unknown checksum algorithm '\(text[..<equals])': use sha-256, sha-1 or md5")
        }
        guard hex.count == algorithm.hexLength, hex.allSatisfy(\.isHexDigit) else {
            throw SwoopError(
                .invalidArgument, "invalid \(algorithm.rawValue) digest '\(hex)': expected \(algorithm.hexLength) hex digits"
            )
        }
        self.algorithm = algorithm
        self.hex = hex
    }

    public var description: String { "\(algorithm.rawValue)=\(hex)" }

    /// The digest of the file at `path`, read in 1 MiB pieces (constant memory).
    static func digest(of path: String, algorithm: Algorithm) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw SwoopError(.fileSystem, "cannot open \(path) to verify its checksum")
        }
        defer { try? handle.close() }
        var sha256 = SHA256()
        var sha1 = Insecure.SHA1()
        var md5 = Insecure.MD5()
        while true {
            let chunk: Data
            do {
                chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            } catch {
                throw SwoopError(.fileSystem, "cannot read \(path) to verify its checksum: \(error)", cause: error)
            }
            if chunk.isEmpty { break }
            switch algorithm {
            case .sha256: sha256.update(data: chunk)
            case .sha1: sha1.update(data: chunk)
            case .md5: md5.update(data: chunk)
            }
        }
        switch algorithm {
        case .sha256: return Hashing.hex(sha256.finalize())
        case .sha1: return Hashing.hex(sha1.finalize())
        case .md5: return Hashing.hex(md5.finalize())
        }
    }
}
