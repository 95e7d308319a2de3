import Testing

@testable import SwoopKit

@Suite("URLList: the -i file format")
struct URLListTests {
    @Test(arguments: [
        ("https://h/a", [URLList.Entry(url: "https://h/a", line: 1)]),
        ("  https://h/a  \n", [URLList.Entry(url: "https://h/a", line: 1)]),
        ("# comment\n\n   # indented comment\nhttps://h/a", [URLList.Entry(url: "https://h/a", line: 4)]),
        ("https://h/a my name.iso", [URLList.Entry(url: "https://h/a", fileName: "my name.iso", line: 1)]),
        ("https://h/a\t\tb.iso\t", [URLList.Entry(url: "https://h/a", fileName: "b.iso", line: 1)]),
        ("https://h/a\r\nhttps://h/b out.bin\r\n", [
            URLList.Entry(url: "https://h/a", line: 1), URLList.Entry(url: "https://h/b", fileName: "out.bin", line: 2),
        ]),
        ("\u{FEFF}https://h/a", [URLList.Entry(url: "https://h/a", line: 1)]),
        ("", []),
        ("\n\n#only comments\n", []),
        ("not-a-url", [URLList.Entry(url: "not-a-url", line: 1)]),
        ("https://h/a#frag", [URLList.Entry(url: "https://h/a#frag", line: 1)]),
        // A lone CR ends a line too (an old Mac editor's list), and CRLF is one break, not two.
        ("https://h/a\rhttps://h/b b.bin\r\rhttps://h/c\r\nhttps://h/d\r", [
            URLList.Entry(url: "https://h/a", line: 1), URLList.Entry(url: "https://h/b", fileName: "b.bin", line: 2),
            URLList.Entry(url: "https://h/c", line: 4), URLList.Entry(url: "https://h/d", line: 5),
        ]),
        ("\n\r\nhttps://h/a\n", [URLList.Entry(url: "https://h/a", line: 3)]),
        // Any Unicode space ends the URL: a non-breaking one pasted from a page, an ideographic one.
        ("https://h/a\u{A0}a.bin", [URLList.Entry(url: "https://h/a", fileName: "a.bin", line: 1)]),
        ("https://h/a\u{3000}\u{A0}my\u{A0}name.bin\u{A0}", [URLList.Entry(url: "https://h/a", fileName: "my\u{A0}name.bin", line: 1)]),
        ("\u{A0}https://h/a\u{2003}", [URLList.Entry(url: "https://h/a", line: 1)]),
        ("https://h/a\u{0B}v.bin", [URLList.Entry(url: "https://h/a", fileName: "v.bin", line: 1)]),
        ("https://one/a\thttps://two/a\u{A0}a.bin", [URLList.Entry(url: "https://one/a", fileName: "a.bin", line: 1, mirrors: ["https://two/a"])]),
    ])
    func parses(_ text: String, _ expected: [URLList.Entry]) {
        #expect(URLList.parse(text) == expected)
    }

    @Test func tenThousandLinesKeepTheirNumbers() {
        let text = (1...10_000).map { "http://h/\($0)" }.joined(separator: "\n")
        let entries = URLList.parse(text)
        #expect(entries.count == 10_000)
        #expect(entries.last == URLList.Entry(url: "http://h/10000", line: 10_000))
    }

    /// Lines of ASCII without TABs are read as bytes; every other line by `Character`s. The two
    /// readings agree on every such line: blanks at either end, comments, one or many spaces
    /// before a name.
    @Test func bytesAndCharactersReadALineAlike() {
        let pieces = ["http://h/a", " ", "  ", "#", "name", "x y", "", "?q=1", "%20"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let line = (0..<Int.random(in: 0...6, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            let expected = URLList.entry(Substring(line), number: 1)
            #expect(URLList.parse(line) == (expected.map { [$0] } ?? []), "line \(line.debugDescription)")
        }
    }

    @Test func aLineBeyondASCIIIsReadByCharacters() {
        #expect(URLList.parse("http://h/é  naïve name\r\n") == [URLList.Entry(url: "http://h/é", fileName: "naïve name", line: 1)])
        // A combining mark after the space makes one Character of the two: no gap there.
        #expect(URLList.parse("http://h/a \u{301}b") == [URLList.Entry(url: "http://h/a \u{301}b", line: 1)])
    }

    @Test func namesTheFirstByteThatIsNotUTF8() {
        let latin1: [UInt8] = Array("http://h/a\nhttp://h/caf".utf8) + [0xE9] + Array(".txt\n".utf8)
        #expect(URLList.firstNonUTF8(in: latin1).map { [$0.line, $0.column, Int($0.byte)] } == [2, 13, 0xE9])
        // A character of two bytes before it on the same line counts as two bytes; a lone
        // continuation byte and a sequence cut short are found where they start.
        let after = Array("\u{E9}x".utf8) + [0x80]
        #expect(URLList.firstNonUTF8(in: after).map { [$0.line, $0.column, Int($0.byte)] } == [1, 4, 0x80])
        let cut = Array("a\n\n".utf8) + [0xE2, 0x82]
        #expect(URLList.firstNonUTF8(in: cut).map { [$0.line, $0.column, Int($0.byte)] } == [3, 1, 0xE2])
        #expect(URLList.firstNonUTF8(in: Array("http://h/\u{1F600}\r\nb".utf8)) == nil)
        #expect(URLList.firstNonUTF8(in: [UInt8]()) == nil)
        // Lines are counted as the list is read: a lone CR ends one, CRLF is one break.
        let mac = Array("a\rb\r\nc\r".utf8) + [0xE9]
        #expect(URLList.firstNonUTF8(in: mac).map { [$0.line, $0.column, Int($0.byte)] } == [4, 1, 0xE9])
    }
}
