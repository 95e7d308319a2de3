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

    /// Whether `signature` is this daemon's for `id` and `expires`, and `expires` is still ahead of `now`.
    public func isValid(id: String, expires: String, signature: String, now: Date = Date()) -> Bool {
        guard let seconds = Int(expires), Double(seconds) > now.timeIntervalSince1970,
            let given = Self.bytes(hex: signature), given.count == SHA256.byteCount
        else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(given, authenticating: Self.message(id: id, expires: seconds), using: key)
    }

    private func signature(id: String, expires: Int) -> String {
        HMAC<SHA256>.authenticationCode(for: Self.message(id: id, expires: expires), using: key).map { String(format: "%02x", $0) }.joined()
    }

    private static func message(id: String, expires: Int) -> Data {
        Data("\(id)\n\(expires)".utf8)
    }

    private static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
