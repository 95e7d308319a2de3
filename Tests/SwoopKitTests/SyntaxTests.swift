import Foundation
import Testing

@testable import SwoopKit

@Suite("Syntax: whitespace trimmed as Foundation trims it")
struct SyntaxTests {
    /// Every case is compared with `trimmingCharacters(in: .whitespaces)`, the call it replaces.
    @Test(arguments: [
        "", " ", "\t", "http://h/a", " http://h/a", "http://h/a\t", "\t http://h/a \t", "\u{00A0}http://h/a\u{3000}",
        "\u{2003}\u{2009}x\u{202F}", "\nhttp://h/a\n", "\r\nx", "x\u{0085}", "\u{200B}x", "a b", " a b ", "é", " é ",
        "\u{1680}ü\u{205F}", "x\u{0001}", "\u{180E}x\u{180E}", "\u{2028}x", "\u{200A}\u{200B}\u{200C}x",
        "\u{0020}", "\u{007F}", "\t\t", "\u{FEFF}x",
    ])
    func matchesFoundation(_ text: String) {
        let expected = text.trimmingCharacters(in: .whitespaces)
        #expect(Syntax.trimmingWhitespace(text) == expected, "\(Array(text.unicodeScalars))")
    }

    /// Every scalar of the Basic Multilingual Plane, leading and trailing, against Foundation.
    @Test func everyScalarIsWhitespaceExactlyWhenFoundationSaysSo() {
        var differing: [UInt32] = []
        for value in UInt32(0)...0xFFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let text = String(scalar) + "x" + String(scalar)
            if Syntax.trimmingWhitespace(text) != text.trimmingCharacters(in: .whitespaces) { differing.append(value) }
        }
        #expect(differing.isEmpty, "\(differing.prefix(10).map { String($0, radix: 16) })")
    }
}
