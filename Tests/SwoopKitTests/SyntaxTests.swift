import Foundation
import Testing

@testable import SwoopKit

@Suite("Syntax: whitespace trimmed as Foundation trims it")
struct SyntaxTests {
    /// Every case is compared with `trimmingCharacters(in: .whitespaces)`, the call it replaces.
    @Test(arguments: [
        "", " ", "\t", "http://h/a", " http://h/a", "http://h/a\t", "\t http://h/a \t", "\u{00A0}http://h/a\u{3000}",
        "\u{2003}\u{2009}x\u{202F}", "\nhttp://h/a\n", "\r\nx", "x\u{0085}", "\u{200B}x", "a b", " a b ", "é", " é ",
        "\u{1680}ü\u{205F}", "x\u{0001}", "\u{180E}x\u{180E}", "\u{2028}x", "\u{200A}\u{200B}\u{200C}x", "\u{0020}", "\u{007F}", "\t\t", "\u{FEFF}x",
    ])
    func matchesFoundation(_ text: String) {
        #expect(Syntax.trimmingWhitespace(text) == text.trimmingCharacters(in: .whitespaces), "\(Array(text.unicodeScalars))")
    }

    @Test func textWithNothingToTrimComesBackUnchanged() {
        let url = "http://127.0.0.1:8080/f00001.bin"
        #expect(Syntax.trimmingWhitespace(url) == url)
    }
}
