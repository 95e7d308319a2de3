import Testing

@testable import SwoopConsole

@Suite("DisplayWidth")
struct DisplayWidthTests {
    @Test(arguments: [
        ("", 0),
        ("abc", 3),
        ("日本", 4),
        ("ｆｕｌｌ", 8),  // Fullwidth Latin.
        ("한국어", 6),
        ("e\u{301}", 1),  // A combining accent takes no column.
        ("a\u{200D}b", 2),  // Zero-width joiner.
        ("…·", 2),
        ("🎉", 2),
    ])
    func widths(text: String, columns: Int) {
        #expect(DisplayWidth.of(text) == columns)
    }

    @Test(arguments: [
        ("ubuntu-24.04.1-desktop-amd64.iso", 16, "ubuntu-2…d64.iso"),
        ("ubuntu-24.04.1-desktop-amd64.iso", 32, "ubuntu-24.04.1-desktop-amd64.iso"),
        ("ubuntu-24.04.1-desktop-amd64.iso", 31, "ubuntu-24.04.1-…sktop-amd64.iso"),
        // The extension outweighs half the room.
        ("abcdefghijklmnop.tar.gz", 8, "abcd….gz"),
        ("abcdefghijklmnop.backup", 9, "a….backup"),
        // An extension too long to keep: plain middle cut.
        ("x.verylongextension", 6, "x.v…on"),
        // No extension; a leading dot is not one.
        ("abcdefghij", 5, "ab…ij"),
        (".bashrc-backup", 6, ".ba…up"),
        // Wide characters: a character that does not fit is left out, never split.
        ("日本語のファイル.mp4", 10, "日本….mp4"),
        ("日本語のファイル", 7, "日本…ル"),
        // Combining accents stay with their letter.
        ("cafe\u{301}-cafe\u{301}-cafe\u{301}", 7, "caf…afé"),
        ("abc", 1, "…"),
        ("abc", 0, ""),
    ])
    func middleTruncation(name: String, limit: Int, expected: String) {
        let result = DisplayWidth.middleTruncated(name, to: limit)
        #expect(result == expected)
        #expect(DisplayWidth.of(result) <= max(0, limit))
    }

    @Test(arguments: [
        ("hello world", 5, "hell…"),
        ("hello", 5, "hello"),
        ("日本語", 4, "日…"),
        ("abc", 0, ""),
    ])
    func clipping(text: String, limit: Int, expected: String) {
        #expect(DisplayWidth.clipped(text, to: limit) == expected)
    }

    @Test func controlCharactersAreReplaced() {
        #expect(DisplayWidth.sanitized("evil\u{1B}[31mred\n.txt\u{7F}\u{9B}") == "evil?[31mred?.txt??")
        #expect(DisplayWidth.sanitized("plain 日本.txt") == "plain 日本.txt")
    }
}
