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
}
