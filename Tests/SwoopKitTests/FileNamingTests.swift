import Foundation
import Testing

@testable import SwoopKit

@Suite("FileNaming")
struct FileNamingTests {
    // MARK: - sanitize

    static let sanitized: [(String, String?)] = [
        ("file.txt", "file.txt"),
        ("a b.txt", "a b.txt"),
        ("€ rates.txt", "€ rates.txt"),
        (".bashrc", ".bashrc"),
        (". hidden", ". hidden"),
        ("..hidden", "..hidden"),
        // Paths collapse to their last component.
        ("../../etc/passwd", "passwd"),
        ("..\\..\\win.ini", "win.ini"),
        ("/absolute/path/x.bin", "x.bin"),
        ("C:\\Users\\me\\x.exe", "x.exe"),
        ("mixed/seps\\and/more\\end.txt", "end.txt"),
        ("evil\u{0}/passwd", "passwd"),
        ("dir/", nil),
        ("dir\\", nil),
        ("a/..", nil),
        ("./..", nil),
        ("../", nil),
        ("/", nil),
        ("\\", nil),
        // Controls.
        ("a\u{0}b.txt", "ab.txt"),
        ("line\nbreak.txt", "linebreak.txt"),
        ("cr\r\nlf", "crlf"),
        ("tab\there", "tabhere"),
        ("bell\u{7}", "bell"),
        ("\u{1B}[31mred", "[31mred"),
        ("del\u{7F}ete", "delete"),
        ("c1\u{80}\u{85}\u{9B}\u{9F}x", "c1x"),
        // Bidi and other format characters.
        ("a\u{202E}gpj.exe", "agpj.exe"),
        ("\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}x", "x"),
        ("\u{2066}\u{2067}\u{2068}\u{2069}x", "x"),
        ("\u{200E}l\u{200F}r\u{061C}a", "lra"),
        ("\u{FEFF}bom.txt", "bom.txt"),
        ("zero\u{200B}width", "zerowidth"),
        ("soft\u{AD}hyphen", "softhyphen"),
        ("word\u{2060}joiner", "wordjoiner"),
        ("tag\u{E0041}\u{E007F}s", "tags"),
        ("mongolian\u{180E}vs", "mongolianvs"),
        ("line\u{2028}para\u{2029}sep", "lineparasep"),
        // Joiners that scripts and emoji need survive.
        ("\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}.png", "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}.png"),
        (
            "\u{645}\u{6CC}\u{200C}\u{62E}\u{648}\u{627}\u{647}\u{645}.pdf",
            "\u{645}\u{6CC}\u{200C}\u{62E}\u{648}\u{627}\u{647}\u{645}.pdf"
        ),
        ("e\u{301}te\u{301}.txt", "e\u{301}te\u{301}.txt"),
        // Trimming.
        ("  name.txt  ", "name.txt"),
        ("\u{A0}nbsp\u{3000}", "nbsp"),
        ("name.txt...", "name.txt"),
        ("name. . .", "name"),
        ("name.txt.\u{202E}", "name.txt"),
        ("inner  spaces  kept", "inner  spaces  kept"),
        // Nothing usable.
        ("", nil),
        (" ", nil),
        (".", nil),
        ("..", nil),
        ("...", nil),
        (" . ", nil),
        (" .. ", nil),
        ("..\u{202E}", nil),
        (".\u{0}.", nil),
        ("\u{0}", nil),
        ("\u{202E}", nil),
        ("\n\t\r", nil),
        ("\u{FEFF}\u{200B}", nil),
        // Not this function's business: other platforms' reserved names and characters.
        ("con", "con"),
        ("a:b*c?.txt", "a:b*c?.txt"),
    ]

    @Test(arguments: sanitized)
    func sanitize(_ raw: String, _ expected: String?) {
        #expect(FileNaming.sanitize(raw) == expected)
        if let expected {
            #expect(Self.scalarsEqual(FileNaming.sanitize(raw), expected))
        }
    }

    @Test func combiningMarkCannotHideASlash() throws {
        // "/\u{338}" is a single Character that is not "/"; the separator must still count.
        let name = try #require(FileNaming.sanitize("evil/\u{338}etc"))
        #expect(!name.unicodeScalars.contains("/"))
        #expect(name.unicodeScalars.elementsEqual("\u{338}etc".unicodeScalars))
        #expect(FileNaming.sanitize("a\\\u{301}b")?.unicodeScalars.contains("\\") == false)
    }

    static let hostile: [String] =
        sanitized.map(\.0) + [
            "../../etc/passwd\u{0}.jpg",
            "..%2F..%2Fetc%2Fpasswd",
            "a/\u{301}b",
            ".\u{301}.",
            String(repeating: "../", count: 200),
            String(repeating: "a", count: 300),
            String(repeating: "é", count: 300) + ".txt",
            String(repeating: "\u{1F600}", count: 100),
            "a" + String(repeating: "\u{301}", count: 300),
            String(repeating: ".", count: 300) + "x",
            String(repeating: " ", count: 300) + "x",
            "x" + String(repeating: " ", count: 300) + "y",
            String(repeating: "a", count: 254) + " .",
            String((0...0x10FF).compactMap(Unicode.Scalar.init).map(Character.init)),
        ]

    @Test(arguments: hostile)
    func sanitizedNamesAreAlwaysSafe(_ raw: String) {
        guard let name = FileNaming.sanitize(raw) else { return }
        Self.expectSafe(name)
        #expect(Self.scalarsEqual(FileNaming.sanitize(name), name), "sanitize is idempotent")
    }

    static let truncated: [(String, String)] = [
        (String(repeating: "a", count: 300), String(repeating: "a", count: 249)),
        (String(repeating: "a", count: 249), String(repeating: "a", count: 249)),
        (String(repeating: "a", count: 250), String(repeating: "a", count: 249)),
        (String(repeating: "a", count: 255), String(repeating: "a", count: 249)),
        (String(repeating: "a", count: 300) + ".txt", String(repeating: "a", count: 245) + ".txt"),
        (String(repeating: "a", count: 300) + ".tar.gz", String(repeating: "a", count: 242) + ".tar.gz"),
        // Two-byte characters: 245 bytes of stem room hold 122 of them.
        (String(repeating: "é", count: 200) + ".txt", String(repeating: "é", count: 122) + ".txt"),
        // Three-byte characters: 83 fill 249 bytes exactly.
        (String(repeating: "日", count: 100), String(repeating: "日", count: 83)),
        (String(repeating: "日", count: 100) + ".txt", String(repeating: "日", count: 81) + ".txt"),
        // Four-byte characters.
        (String(repeating: "\u{1F600}", count: 70) + ".tar.gz", String(repeating: "\u{1F600}", count: 60) + ".tar.gz"),
        // Grapheme clusters are not split: e + U+0301 is three bytes.
        (String(repeating: "e\u{301}", count: 100) + ".txt", String(repeating: "e\u{301}", count: 81) + ".txt"),
        // A single cluster longer than the limit is cut between scalars.
        ("a" + String(repeating: "\u{301}", count: 300), "a" + String(repeating: "\u{301}", count: 124)),
        // A long "extension" is not kept.
        ("a." + String(repeating: "x", count: 300), "a." + String(repeating: "x", count: 247)),
        // The extension is the part after the last dot.
        (
            String(repeating: "a", count: 250) + "....." + String(repeating: "b", count: 10),
            String(repeating: "a", count: 238) + "." + String(repeating: "b", count: 10)
        ),
        // Truncation does not leave trailing spaces or dots behind.
        (
            String(repeating: "a", count: 245) + "     " + String(repeating: "b", count: 10),
            String(repeating: "a", count: 245)
        ),
        (
            String(repeating: "a", count: 245) + " . . " + String(repeating: "b", count: 10),
            String(repeating: "a", count: 245)
        ),
        // Hidden files without extension are truncated like any name.
        ("." + String(repeating: "h", count: 300), "." + String(repeating: "h", count: 248)),
    ]

    @Test(arguments: truncated)
    func truncatesLeavingRoomForThePartSuffix(_ raw: String, _ expected: String) throws {
        let name = try #require(FileNaming.sanitize(raw))
        #expect(Self.scalarsEqual(name, expected))
        #expect(name.utf8.count <= 249)
    }

    @Test func truncationKeepsWholeCharactersForEveryLength() {
        let alphabet = ["a", "é", "日", "\u{1F600}", "e\u{301}", "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}"]
        for character in alphabet {
            for count in stride(from: 1, through: 300, by: 7) {
                for ext in ["", ".txt", ".tar.zst"] {
                    let raw = String(repeating: character, count: count) + ext
                    guard let name = FileNaming.sanitize(raw) else {
                        Issue.record("\(raw.debugDescription) was rejected")
                        continue
                    }
                    Self.expectSafe(name)
                    #expect(name.hasSuffix(ext))
                    let stem = name.dropLast(ext.count)
                    #expect(stem.allSatisfy { String($0) == character }, "no character was split")
                    #expect(
                        raw.utf8.count <= 249
                            ? name == raw : name.utf8.count > 249 - character.utf8.count - ext.utf8.count
                    )
                }
            }
        }
    }

    // MARK: - suggestedName

    static let suggestions: [(String?, String, String)] = [
        (nil, "http://h/", "index.html"),
        (nil, "http://h", "index.html"),
        (nil, "https://h:8443", "index.html"),
        (nil, "http://h/dir/", "index.html"),
        (nil, "http://h/?q=file.iso", "index.html"),
        (nil, "http://h/dir/file.iso?x=1#f", "file.iso"),
        (nil, "http://h/dir/file.iso#frag/ment.txt", "file.iso"),
        (nil, "http://h/file.iso?path=/other/name.bin", "file.iso"),
        (nil, "ftp://h/pub/file.tar.gz", "file.tar.gz"),
        (nil, "http://user:pw@h/a/b/c.zip", "c.zip"),
        (nil, "http://h/a%20b.txt", "a b.txt"),
        (nil, "http://h/100%25.txt", "100%.txt"),
        (nil, "http://h/%E2%82%AC.txt", "€.txt"),
        (nil, "http://h/caf%E9.txt", "café.txt"),  // Not UTF-8: read as Latin-1.
        (nil, "http://h/..%2F..%2Fetc%2Fpasswd", ".._.._etc_passwd"),
        (nil, "http://h/dir/a%2fb.txt", "a_b.txt"),
        (nil, "http://h/a%5Cb.txt", "a_b.txt"),
        (nil, "http://h/%2F", "_"),
        (nil, "http://h/%2E%2E", "index.html"),
        (nil, "http://h/%2E", "index.html"),
        (nil, "http://h/a/..", "index.html"),
        (nil, "http://h/%00evil.txt", "evil.txt"),
        (nil, "http://h/a%E2%80%AEgpj.exe", "agpj.exe"),
        (nil, "http://h/%0A%0D", "index.html"),
        (nil, "http://h/name.txt%20%20", "name.txt"),
        // Content-Disposition wins when it has a usable name.
        ("attachment; filename=\"report.pdf\"", "http://h/download?id=1", "report.pdf"),
        ("attachment; filename*=UTF-8''%E2%82%AC%20rates.txt", "http://h/", "€ rates.txt"),
        ("attachment; filename=\"../../etc/passwd\"", "http://h/x.bin", "passwd"),
        ("attachment; filename=\"..\\\\..\\\\win.ini\"", "http://h/x.bin", "win.ini"),
        ("attachment; filename=\"a\u{202E}gpj.exe\"", "http://h/x.bin", "agpj.exe"),
        ("attachment; filename=\"a%2Fb.txt\"", "http://h/x.bin", "a%2Fb.txt"),
        // ...and falls back to the URL when it has not.
        ("attachment; filename=\"..\"", "http://h/x.bin", "x.bin"),
        ("attachment; filename=\"\u{202E}\"", "http://h/", "index.html"),
        ("attachment; filename=\"dir/\"", "http://h/x.bin", "x.bin"),
        ("attachment", "http://h/x.bin", "x.bin"),
        ("inline", "http://h/x.bin", "x.bin"),
        ("filename=x.txt", "http://h/x.bin", "x.bin"),
        ("", "http://h/x.bin", "x.bin"),
        ("garbage;;;", "http://h/", "index.html"),
    ]

    @Test(arguments: suggestions)
    func suggestedName(_ header: String?, _ urlString: String, _ expected: String) throws {
        let url = try #require(URL(string: urlString))
        let name = FileNaming.suggestedName(contentDisposition: header, url: url)
        #expect(name == expected)
        Self.expectSafe(name)
    }

    @Test func suggestedNameIsBoundedForLongURLSegments() throws {
        let segment = String(repeating: "%E6%97%A5", count: 200) + ".iso"
        let url = try #require(URL(string: "http://h/" + segment))
        let name = FileNaming.suggestedName(contentDisposition: nil, url: url)
        #expect(name == String(repeating: "日", count: 81) + ".iso")
        Self.expectSafe(name)
    }

    // MARK: - candidate

    static let candidates: [(String, Int, String)] = [
        ("file.txt", 0, "file.txt"),
        ("file.txt", 1, "file.1.txt"),
        ("file.txt", 12, "file.12.txt"),
        ("file.txt", -3, "file.txt"),
        ("file.tar.gz", 1, "file.1.tar.gz"),
        ("file.TAR.GZ", 2, "file.2.TAR.GZ"),
        ("file.tar.bz2", 1, "file.1.tar.bz2"),
        ("file.tar.xz", 1, "file.1.tar.xz"),
        ("file.tar.zst", 1, "file.1.tar.zst"),
        ("file.tar", 1, "file.1.tar"),
        ("file.gz", 1, "file.1.gz"),
        ("file.tgz", 1, "file.1.tgz"),
        ("file.zip.gz", 1, "file.zip.1.gz"),
        ("a.b.c", 3, "a.b.3.c"),
        ("notes", 1, "notes.1"),
        ("notes", 0, "notes"),
        (".bashrc", 1, ".bashrc.1"),
        (".config.json", 1, ".config.1.json"),
        (".tar.gz", 1, ".tar.1.gz"),
        ("x.tar.gz", 1, "x.1.tar.gz"),
        ("Report 2024. Final draft", 1, "Report 2024. Final draft.1"),
        ("archive.averyveryverylongextension", 1, "archive.averyveryverylongextension.1"),
        ("€ rates.txt", 2, "€ rates.2.txt"),
        (String(repeating: "a", count: 245) + ".txt", 0, String(repeating: "a", count: 245) + ".txt"),
        (String(repeating: "a", count: 245) + ".txt", 1, String(repeating: "a", count: 243) + ".1.txt"),
        (String(repeating: "a", count: 245) + ".txt", 1000, String(repeating: "a", count: 240) + ".1000.txt"),
        (String(repeating: "a", count: 249), 1, String(repeating: "a", count: 247) + ".1"),
        (String(repeating: "a", count: 255), 0, String(repeating: "a", count: 249)),
        (String(repeating: "é", count: 122) + ".txt", 7, String(repeating: "é", count: 121) + ".7.txt"),
        (String(repeating: "a", count: 242) + ".tar.gz", 9, String(repeating: "a", count: 240) + ".9.tar.gz"),
    ]

    @Test(arguments: candidates)
    func candidate(_ name: String, _ attempt: Int, _ expected: String) {
        #expect(FileNaming.candidate(name, attempt: attempt) == expected)
    }

    @Test(arguments: [
        "file.txt", "notes", ".bashrc", "file.tar.gz",
        String(repeating: "a", count: 255),
        String(repeating: "日", count: 83) + ".txt",
        String(repeating: "\u{1F600}", count: 62) + ".tar.gz",
    ])
    func candidatesAreDistinctAndBounded(_ name: String) {
        let attempts = Array(0...200) + [Int.max - 1, Int.max]
        let names = attempts.map { FileNaming.candidate(name, attempt: $0) }
        #expect(Set(names).count == names.count)
        for candidate in names {
            Self.expectSafe(candidate)
            #expect(Self.scalarsEqual(FileNaming.sanitize(candidate), candidate))
        }
    }

    // MARK: - partFileName

    static let partNames: [(String, String)] = [
        ("file.txt", "file.txt.swoop"),
        ("notes", "notes.swoop"),
        (".bashrc", ".bashrc.swoop"),
        ("file.tar.gz", "file.tar.gz.swoop"),
        (String(repeating: "a", count: 249), String(repeating: "a", count: 249) + ".swoop"),
        (String(repeating: "a", count: 250), String(repeating: "a", count: 249) + ".swoop"),
        (String(repeating: "a", count: 255), String(repeating: "a", count: 249) + ".swoop"),
        (String(repeating: "a", count: 251) + ".txt", String(repeating: "a", count: 245) + ".txt.swoop"),
        (String(repeating: "日", count: 85), String(repeating: "日", count: 83) + ".swoop"),
        (
            String(repeating: "\u{1F600}", count: 62) + ".tar.gz",
            String(repeating: "\u{1F600}", count: 60) + ".tar.gz.swoop"
        ),
    ]

    @Test(arguments: partNames)
    func partFileName(_ finalName: String, _ expected: String) {
        let part = FileNaming.partFileName(for: finalName)
        #expect(part == expected)
        #expect(part.utf8.count <= 255)
        #expect(part.hasSuffix(".swoop"))
    }

    @Test func partFileNamesOfDistinctCandidatesStayDistinct() {
        let name = String(repeating: "a", count: 300) + ".txt"
        let finals = (0...50).map { FileNaming.candidate(name, attempt: $0) }
        let parts = finals.map(FileNaming.partFileName(for:))
        #expect(Set(parts).count == parts.count)
        #expect(zip(finals, parts).allSatisfy { $1 == $0 + ".swoop" && $1.utf8.count <= 255 })
    }

    // MARK: - Pieces

    static let extensions: [(String, String, String)] = [
        ("file.txt", "file", ".txt"),
        ("file", "file", ""),
        (".bashrc", ".bashrc", ""),
        (".a.b", ".a", ".b"),
        ("file.", "file.", ""),
        ("file.tar.gz", "file", ".tar.gz"),
        ("file.Tar.Zst", "file", ".Tar.Zst"),
        ("tar.gz", "tar", ".gz"),
        ("file.tar.lz4", "file.tar", ".lz4"),
        ("a.b c", "a.b c", ""),
        ("a." + String(repeating: "x", count: 19), "a", "." + String(repeating: "x", count: 19)),
        ("a." + String(repeating: "x", count: 20), "a." + String(repeating: "x", count: 20), ""),
    ]

    @Test(arguments: extensions)
    func splitExtension(_ name: String, _ stem: String, _ ext: String) {
        let split = FileNaming.splitExtension(name)
        #expect(split.stem == stem)
        #expect(split.ext == ext)
    }

    static let forbidden: [(UInt32, Bool)] = [
        (0x00, true), (0x09, true), (0x0A, true), (0x1F, true), (0x20, false), (0x7E, false), (0x7F, true),
        (0x80, true), (0x9F, true), (0xA0, false), (0xAD, true), (0x061C, true), (0x200B, true),
        (0x200C, false), (0x200D, false), (0x200E, true), (0x200F, true), (0x2028, true), (0x2029, true),
        (0x202A, true), (0x202E, true), (0x2066, true), (0x2069, true), (0xFEFF, true), (0xE0001, true),
        (0x0301, false), (0xFFFD, false), (0x1F600, false),
    ]

    @Test(arguments: forbidden)
    func forbiddenScalars(_ value: UInt32, _ isForbidden: Bool) throws {
        let scalar = try #require(Unicode.Scalar(value))
        #expect(FileNaming.isForbidden(scalar) == isForbidden)
    }

    // MARK: - Helpers

    /// Byte-exact comparison: `==` on strings ignores differences in normalization.
    static func scalarsEqual(_ a: String?, _ b: String) -> Bool {
        a.map { Array($0.utf8) == Array(b.utf8) } ?? false
    }

    static func expectSafe(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let scalars = Array(name.unicodeScalars)
        #expect(!scalars.isEmpty, sourceLocation: sourceLocation)
        #expect(name != "." && name != "..", sourceLocation: sourceLocation)
        #expect(!scalars.contains("/") && !scalars.contains("\\"), sourceLocation: sourceLocation)
        #expect(!scalars.contains(where: FileNaming.isForbidden), sourceLocation: sourceLocation)
        #expect(name.utf8.count <= 249, "\(name.utf8.count) bytes", sourceLocation: sourceLocation)
        #expect(scalars.first?.properties.isWhitespace == false, sourceLocation: sourceLocation)
        #expect(scalars.last.map { $0 == "." || $0.properties.isWhitespace } == false, sourceLocation: sourceLocation)
    }
}
