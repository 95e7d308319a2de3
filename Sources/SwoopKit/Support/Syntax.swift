import Foundation

/// Small pieces of HTTP header syntax that parsers at every layer share (RFC 9110 §5.6).
enum Syntax {
    /// Drops leading and trailing spaces and tabs (HTTP optional whitespace).
    static func trimmingOWS(_ text: some StringProtocol) -> String {
        let scalars = Array(text.unicodeScalars)
        let isOWS: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = scalars.firstIndex(where: { !isOWS($0) }),
            let last = scalars.lastIndex(where: { !isOWS($0) })
        else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }

    /// Drops leading and trailing whitespace exactly as Foundation's `CharacterSet.whitespaces`
    /// counts it (Core Foundation's list: tab, space, U+00A0, U+1680, U+2000–U+200B, U+202F,
    /// U+205F, U+3000), without Foundation's bridging: every URL of a long list is trimmed. Text
    /// with nothing to trim comes back as it is.
    static func trimmingWhitespace(_ text: String) -> String {
        let bytes = text.utf8
        if let first = bytes.first, let last = bytes.last, (0x21..<0x80).contains(first), (0x21..<0x80).contains(last) {
            return text
        }
        let scalars = text.unicodeScalars
        guard let start = scalars.firstIndex(where: { !isWhitespace($0) }),
            let end = scalars.lastIndex(where: { !isWhitespace($0) })
        else { return "" }
        return String(scalars[start...end])
    }

    /// RFC 9110 `tchar`: what a token (a header name, a parameter name) is made of.
    static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9": true
        case "!", "#", "$", "%", "&", "'", "*", "+", "-", ".", "^", "_", "`", "|", "~": true
        default: false
        }
    }

    /// Whether `scalar` is in `CharacterSet.whitespaces` (see ``trimmingWhitespace(_:)``).
    static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x20, 0xA0, 0x1680, 0x2000...0x200B, 0x202F, 0x205F, 0x3000: return true
        default: return false
        }
    }

    /// A non-negative decimal of one or more ASCII digits, or `nil` if malformed or too large.
    static func decimal(_ bytes: some Collection<UInt8>) -> Int? {
        guard !bytes.isEmpty else { return nil }
        var value = 0
        for byte in bytes {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    /// The lower-cased host of a URL as written (with `:port` when `includingPort` and one is
    /// given), or the text itself when it has none. `rangeOfHost`, not `host`: the host getter runs
    /// IDNA through ICU, which costs megabytes for nothing on an ASCII host.
    static func host(of url: String, includingPort: Bool = false) -> String {
        guard let components = URLComponents(string: url), let range = components.rangeOfHost else { return url }
        let port = includingPort ? components.port.map { ":\($0)" } ?? "" : ""
        return url[range].lowercased() + port
    }
}
