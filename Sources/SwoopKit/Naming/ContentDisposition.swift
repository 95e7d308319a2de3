import Foundation

/// A parsed `Content-Disposition` response header (RFC 6266).
///
/// Parsing is as lenient as browsers are: whitespace is tolerated anywhere between
/// tokens, parameter names are case-insensitive, an unquoted value may contain spaces up
/// to the next `;`, an unterminated quoted string runs to the end of the header, and
/// unknown or malformed parameters are skipped rather than failing the whole header.
///
/// The file name is the server's suggestion and is not trusted: it may contain path
/// separators, control characters or bidi overrides. Pass it through
/// ``FileNaming/sanitize(_:)`` before it gets anywhere near a file system.
public struct ContentDisposition: Sendable, Equatable {
    /// The disposition type, lowercased: `"attachment"`, `"inline"` or an extension type.
    public var type: String

    /// The suggested file name, decoded but not sanitized; `nil` when absent, empty or undecodable.
    ///
    /// A decodable `filename*` parameter (an RFC 8187 ext-value in UTF-8 or ISO-8859-1)
    /// takes precedence over `filename`. When a parameter appears more than once, the
    /// first occurrence wins.
    public var filename: String?

    /// Parses the value of a `Content-Disposition` header.
    ///
    /// - Parameter header: The header value, for example `attachment; filename="a b.txt"`.
    /// - Returns: `nil` when the header has no valid disposition type (empty, or not an
    ///   RFC 9110 token, as in `; filename=a` or `"attachment"`).
    public init?(parsing header: String) {
        var cursor = Cursor(header)
        cursor.skipWhitespace()
        let type = Syntax.trimmingOWS(cursor.take(until: ";"))
        guard !type.isEmpty, type.unicodeScalars.allSatisfy(Syntax.isTokenCharacter) else {
            return nil
        }
        var plain: String?
        var extended: String?
        while cursor.skip(";") {
            guard let (name, value) = cursor.parameter() else { continue }
            switch name {
            case "filename" where plain == nil: plain = value
            case "filename*" where extended == nil: extended = value
            default: break
            }
        }
        self.type = type.lowercased()
        let decodedExtended = extended.flatMap(Self.decodeExtendedValue).flatMap(Self.nonEmpty)
        self.filename = decodedExtended ?? plain.flatMap(Self.nonEmpty)
    }

    /// Decodes an RFC 8187 ext-value: `charset'[language]'percent-encoded-value`.
    ///
    /// Only UTF-8 and ISO-8859-1 are supported, as RFC 8187 requires; any other charset,
    /// a malformed percent escape or invalid UTF-8 yields `nil`. Characters that should
    /// have been percent-encoded but were sent literally are accepted as they are.
    static func decodeExtendedValue(_ raw: String) -> String? {
        let parts = raw.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let charset = Syntax.trimmingOWS(parts[0]).lowercased()
        let value = parts[2]
        switch charset {
        case "utf-8", "utf8":
            guard let bytes = percentDecodedBytes(value, strict: true) else { return nil }
            return decodeUTF8(bytes)
        case "iso-8859-1", "latin1", "iso_8859-1":
            return percentDecodedLatin1(value)
        default:
            return nil
        }
    }

    /// Percent-decodes `text` to bytes; literal characters contribute their UTF-8 bytes.
    ///
    /// - Parameter strict: When `true`, a `%` not followed by two hex digits makes the
    ///   whole value invalid (`nil`); when `false`, such a `%` is kept literally.
    static func percentDecodedBytes(_ text: some StringProtocol, strict: Bool) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                if index + 2 < utf8.count,
                    let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2])
                {
                    bytes.append(high << 4 | low)
                    index += 3
                    continue
                }
                if strict { return nil }
            }
            bytes.append(byte)
            index += 1
        }
        return bytes
    }

    /// Percent-decodes `text` as ISO-8859-1, keeping literal characters as they are.
    ///
    /// - Returns: `nil` when a `%` is not followed by two hex digits.
    static func percentDecodedLatin1(_ text: some StringProtocol) -> String? {
        var result = String.UnicodeScalarView()
        var pending = text.unicodeScalars[...]
        while let scalar = pending.popFirst() {
            guard scalar == "%" else {
                result.append(scalar)
                continue
            }
            let digits = pending.prefix(2).compactMap { $0.isASCII ? hexValue(UInt8($0.value)) : nil }
            guard digits.count == 2 else { return nil }
            result.append(Unicode.Scalar(digits[0] << 4 | digits[1]))
            pending = pending.dropFirst(2)
        }
        return String(result)
    }

    /// Decodes UTF-8, returning `nil` for ill-formed input instead of inserting U+FFFD.
    static func decodeUTF8(_ bytes: [UInt8]) -> String? {
        var scalars = String.UnicodeScalarView()
        let failed = transcode(
            bytes.makeIterator(),
            from: UTF8.self,
            to: UTF32.self,
            stoppingOnError: true
        ) { unit in
            if let scalar = Unicode.Scalar(unit) { scalars.append(scalar) }
        }
        return failed ? nil : String(scalars)
    }

    /// Decodes ISO-8859-1, where every byte is the code point of the same value.
    static func decodeLatin1(_ bytes: [UInt8]) -> String {
        String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func nonEmpty(_ value: String) -> String? {
        value.isEmpty ? nil : value
    }

}

extension ContentDisposition {
    /// A forward-only reader over the scalars of a header value.
    fileprivate struct Cursor {
        private let scalars: [Unicode.Scalar]
        private var index = 0

        init(_ text: String) {
            scalars = Array(text.unicodeScalars)
        }

        private var current: Unicode.Scalar? {
            index < scalars.count ? scalars[index] : nil
        }

        mutating func skipWhitespace() {
            while let scalar = current, scalar == " " || scalar == "\t" { index += 1 }
        }

        /// Consumes `scalar` if it is next, returning whether it did.
        mutating func skip(_ scalar: Unicode.Scalar) -> Bool {
            guard current == scalar else { return false }
            index += 1
            return true
        }

        /// Consumes up to (not including) the first `stop`, or to the end.
        mutating func take(until stop: Unicode.Scalar) -> String {
            var taken = String.UnicodeScalarView()
            while let scalar = current, scalar != stop {
                taken.append(scalar)
                index += 1
            }
            return String(taken)
        }

        /// Reads `name = value` up to the next `;`, leaving the cursor on it (or at the end).
        ///
        /// - Returns: The lowercased name and the unquoted value, or `nil` for a parameter
        ///   without `=` or whose name is not a token; either way the cursor has moved past it.
        mutating func parameter() -> (name: String, value: String)? {
            skipWhitespace()
            var name = String.UnicodeScalarView()
            while let scalar = current, scalar != "=", scalar != ";" {
                name.append(scalar)
                index += 1
            }
            guard skip("=") else { return nil }
            skipWhitespace()
            let value: String
            if skip("\"") {
                value = quotedStringBody()
                _ = take(until: ";")  // Trailing junk after the closing quote is ignored.
            } else {
                value = Syntax.trimmingOWS(take(until: ";"))
            }
            let trimmedName = Syntax.trimmingOWS(String(name))
            guard !trimmedName.isEmpty,
                trimmedName.unicodeScalars.allSatisfy(Syntax.isTokenCharacter)
            else { return nil }
            return (trimmedName.lowercased(), value)
        }

        /// Reads the rest of a quoted string whose opening quote was consumed, undoing escapes.
        private mutating func quotedStringBody() -> String {
            var body = String.UnicodeScalarView()
            while let scalar = current {
                index += 1
                switch scalar {
                case "\"":
                    return String(body)
                case "\\":
                    if let escaped = current {
                        body.append(escaped)
                        index += 1
                    }
                default:
                    body.append(scalar)
                }
            }
            return String(body)
        }
    }
}
