import Crypto

public enum Hashing {
    static func sha256Hex(_ text: String) -> String {
        hex(sha256(text))
    }

    /// The sha-256 digest of a text's UTF-8 bytes.
    static func sha256(_ text: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(text.utf8)))
    }

    /// Lower-case hex of a digest's bytes.
    public static func hex<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
