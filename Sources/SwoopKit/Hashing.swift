import Crypto

enum Hashing {
    static func sha256Hex(_ text: String) -> String {
        SHA256.hash(data: Array(text.utf8)).map { byteHex($0) }.joined()
    }

    private static func byteHex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xf)]])
    }
}
