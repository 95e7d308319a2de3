import Foundation

/// The `Content-Range` of a `206 Partial Content` response (RFC 9110 §14.4).
///
/// A resumed download must check this against what it asked for before writing a byte:
/// a server may answer a range request with a different range.
public struct ContentRange: Sendable, Equatable {
    /// The offset of the first byte in the body.
    public var start: Int

    /// The offset of the last byte in the body (inclusive).
    public var end: Int

    /// The length of the whole representation, or `nil` when the server sent `*`.
    public var total: Int?

    /// The number of bytes in the body: `end - start + 1`.
    public var length: Int { end - start + 1 }

    /// Parses a `Content-Range` value such as `bytes 0-499/1234` or `bytes 0-499/*`.
    ///
    /// The unit is matched case-insensitively and surrounding whitespace is ignored; a
    /// `=` after the unit, which some servers send, is tolerated. Numbers are plain ASCII
    /// digits (no sign).
    ///
    /// - Parameter parsing: The header value.
    /// - Returns: `nil` for anything malformed: another unit, non-digits, a number that
    ///   overflows `Int`, `end < start`, `end >= total`, or a length that overflows `Int`.
    public init?(parsing: String) {
        guard let rest = Self.rangeSpec(parsing),
            let dash = rest.firstIndex(of: UInt8(ascii: "-")),
            let slash = rest.firstIndex(of: UInt8(ascii: "/")), dash < slash,
            let start = Syntax.decimal(rest[..<dash]),
            let end = Syntax.decimal(rest[(dash + 1)..<slash]),
            start <= end, end < Int.max
        else { return nil }
        let totalField = rest[(slash + 1)...]
        if totalField.elementsEqual("*".utf8) {
            total = nil
        } else {
            guard let total = Syntax.decimal(totalField), end < total else { return nil }
            self.total = total
        }
        self.start = start
        self.end = end
    }

    /// The `Range` request header value that asks for everything from `offset` on.
    ///
    /// - Parameter offset: The first byte wanted; negative values count as `0`.
    /// - Returns: For example `bytes=1024-`.
    public static func requestHeader(from offset: Int) -> String {
        "bytes=\(max(0, offset))-"
    }

    /// The bytes after the `bytes` unit and its separator, with surrounding whitespace removed.
    static func rangeSpec(_ header: String) -> ArraySlice<UInt8>? {
        let isOWS: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        var bytes = Array(header.utf8)[...]
        while let first = bytes.first, isOWS(first) { bytes.removeFirst() }
        while let last = bytes.last, isOWS(last) { bytes.removeLast() }
        let unit = "bytes".utf8
        guard bytes.count > unit.count,
            bytes.prefix(unit.count).map({ $0 | 0x20 }).elementsEqual(unit)
        else { return nil }
        bytes.removeFirst(unit.count)
        guard let separator = bytes.first, isOWS(separator) || separator == UInt8(ascii: "=") else { return nil }
        bytes.removeFirst()
        while let first = bytes.first, isOWS(first) { bytes.removeFirst() }
        return bytes
    }

}

/// The `Content-Range` of a `416 Range Not Satisfiable` response: `bytes */1234`.
///
/// It tells how long the representation is, so a download that asked for bytes past the
/// end can tell "already complete" from "the file shrank".
public struct UnsatisfiedRange: Sendable, Equatable {
    /// The length of the whole representation.
    public var total: Int

    /// Parses a value of the form `bytes */1234`.
    ///
    /// - Parameter parsing: The header value.
    /// - Returns: `nil` unless the value is exactly that form with a non-negative total.
    public init?(parsing: String) {
        guard let rest = ContentRange.rangeSpec(parsing),
            rest.starts(with: "*/".utf8),
            let total = Syntax.decimal(rest.dropFirst(2))
        else { return nil }
        self.total = total
    }
}
