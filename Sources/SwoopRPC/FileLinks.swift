import Crypto
import Foundation
import SwoopKit

/// Links to finished files that carry no secret: `/files/GID/NAME?expires=T&signature=S`, where S
/// is an HMAC-SHA-256 of the id and the expiry under a key made from the RPC secret. The page asks
/// for one with `swoop.getFileLink`; anyone holding it may fetch that one file until it expires,
/// and nothing else (a link names no path: the daemon looks the file up by id).
public struct FileLinks: Sendable {
    /// How long a link works.
    public static let lifetime: TimeInterval = 3600

    /// The key's bytes (`SymmetricKey` is not `Sendable`).
    private let keyBytes: [UInt8]
    private var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    public init(secret: String) {
        // A key of its own: a link reveals nothing usable as the RPC secret.
        let derived = HMAC<SHA256>.authenticationCode(for: Data("swoop file links v1".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        keyBytes = Array(derived)
    }

    /// The path and query of a link to `name` of download `id`, valid until `expires` (seconds since 1970).
    public func path(id: Download.ID, name: String, expires: Int) -> String {
        let allowed = CharacterSet.urlPathAllowed.subtracting(CharacterSet(charactersIn: "/?#%;"))
        let encoded = name.addingPercentEncoding(withAllowedCharacters: allowed) ?? "file"
        return "/files/\(id.rawValue)/\(encoded)?expires=\(expires)&signature=\(signature(id: id.rawValue, expires: expires))"
    }

    /// Whether `signature` is this daemon's for `id` and `expires` (compared in constant time), and
    /// `expires` is still ahead of `now`.
    public func isValid(id: String, expires: String, signature: String, now: Date = Date()) -> Bool {
        guard let seconds = Int(expires), Double(seconds) > now.timeIntervalSince1970 else { return false }
        return Aria2RPC.constantTimeEqual(signature, self.signature(id: id, expires: seconds))
    }

    private func signature(id: String, expires: Int) -> String {
        Hashing.hex(HMAC<SHA256>.authenticationCode(for: Data("\(id)\n\(expires)".utf8), using: key))
    }
}
