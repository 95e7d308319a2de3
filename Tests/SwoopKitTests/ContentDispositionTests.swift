import Foundation
import Testing

@testable import SwoopKit

@Suite("ContentDisposition")
struct ContentDispositionTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let header: String
        let type: String
        let filename: String?
        var testDescription: String { header.debugDescription }
    }

    static let valid: [Case] = [
        // Types alone.
        Case(header: "inline", type: "inline", filename: nil),
        Case(header: "attachment", type: "attachment", filename: nil),
        Case(header: "ATTACHMENT", type: "attachment", filename: nil),
        Case(header: "  attachment  ", type: "attachment", filename: nil),
        Case(header: "attachment;", type: "attachment", filename: nil),
        Case(header: "x-custom-type; filename=a", type: "x-custom-type", filename: "a"),
        Case(header: "inline; filename=\"foo.html\"", type: "inline", filename: "foo.html"),
        // Tokens and quoted strings.
        Case(header: "attachment; filename=foo.html", type: "attachment", filename: "foo.html"),
        Case(header: "attachment; filename=\"a b.txt\"", type: "attachment", filename: "a b.txt"),
        Case(header: "attachment; filename=\"a;b.txt\"", type: "attachment", filename: "a;b.txt"),
        Case(header: "attachment; filename=\"f\\oo.html\"", type: "attachment", filename: "foo.html"),
        Case(
            header: "attachment; filename=\"\\\"quoting\\\" tested.html\"",
            type: "attachment",
            filename: "\"quoting\" tested.html"
        ),
        Case(header: "attachment; filename=\"back\\\\slash.txt\"", type: "attachment", filename: "back\\slash.txt"),
        Case(header: "attachment; filename=\"unterminated.txt", type: "attachment", filename: "unterminated.txt"),
        Case(header: "attachment; filename=\"trailing\\", type: "attachment", filename: "trailing"),
        Case(header: "attachment; filename=\"quoted\"junk; size=3", type: "attachment", filename: "quoted"),
        Case(header: "attachment; filename=\"€ rates.txt\"", type: "attachment", filename: "€ rates.txt"),
        // Case-insensitive parameters and whitespace tolerance.
        Case(header: "attachment; FILENAME=foo.html", type: "attachment", filename: "foo.html"),
        Case(header: "attachment; FileName=\"foo.html\"", type: "attachment", filename: "foo.html"),
        Case(header: "attachment ;filename=foo.html", type: "attachment", filename: "foo.html"),
        Case(header: "attachment;filename=foo.html", type: "attachment", filename: "foo.html"),
        Case(header: "attachment; filename = \"foo.html\" ", type: "attachment", filename: "foo.html"),
        Case(header: "attachment;\tfilename=\tfoo.html\t", type: "attachment", filename: "foo.html"),
        // Browsers accept unquoted values with spaces up to the next ';'.
        Case(header: "attachment; filename=a b.txt", type: "attachment", filename: "a b.txt"),
        Case(header: "attachment; filename=a b.txt ; size=12", type: "attachment", filename: "a b.txt"),
        // Other parameters are skipped, before or after.
        Case(header: "attachment; size=123; filename=x.bin", type: "attachment", filename: "x.bin"),
        Case(
            header: "attachment; filename=x.bin; creation-date=\"Wed, 12 Feb 1997 16:29:51 -0500\"",
            type: "attachment",
            filename: "x.bin"
        ),
        Case(header: "attachment; foo=\"a;filename=evil\"; filename=good", type: "attachment", filename: "good"),
        Case(header: "attachment; novalue; filename=x", type: "attachment", filename: "x"),
        Case(header: "attachment; bad name=1; filename=x", type: "attachment", filename: "x"),
        Case(header: "attachment; =nameless; filename=x", type: "attachment", filename: "x"),
        Case(header: "attachment; filenamex=no", type: "attachment", filename: nil),
        Case(header: "attachment; xfilename=no", type: "attachment", filename: nil),
        Case(header: "attachment; filename", type: "attachment", filename: nil),
        Case(header: "attachment; filename=", type: "attachment", filename: nil),
        Case(header: "attachment; filename=\"\"", type: "attachment", filename: nil),
        Case(header: "attachment;;; filename=x;;", type: "attachment", filename: "x"),
        // The first occurrence wins.
        Case(header: "attachment; filename=first; filename=second", type: "attachment", filename: "first"),
        // Hostile names are returned raw; sanitizing is FileNaming's job.
        Case(header: "attachment; filename=\"../../etc/passwd\"", type: "attachment", filename: "../../etc/passwd"),
        Case(header: "attachment; filename=\"a\u{202E}gpj.exe\"", type: "attachment", filename: "a\u{202E}gpj.exe"),
        // RFC 8187 ext-values.
        Case(
            header: "attachment; filename*=UTF-8''%E2%82%AC%20rates.txt",
            type: "attachment",
            filename: "€ rates.txt"
        ),
        Case(
            header: "attachment; filename*=utf-8''%e2%82%ac%20rates.txt",
            type: "attachment",
            filename: "€ rates.txt"
        ),
        Case(header: "attachment; filename*=UTF-8'en'%E2%82%AC.txt", type: "attachment", filename: "€.txt"),
        Case(
            header: "attachment; filename*=ISO-8859-1''%A3%20rates.txt",
            type: "attachment",
            filename: "£ rates.txt"
        ),
        Case(header: "attachment; filename*=iso-8859-1'de'M%FCller.pdf", type: "attachment", filename: "Müller.pdf"),
        Case(header: "attachment; FILENAME*=UTF-8''plain.txt", type: "attachment", filename: "plain.txt"),
        Case(
            header: "attachment; filename*=\"UTF-8''quoted%20anyway.txt\"",
            type: "attachment",
            filename: "quoted anyway.txt"
        ),
        Case(header: "attachment; filename*=UTF-8''literal€.txt", type: "attachment", filename: "literal€.txt"),
        Case(header: "attachment; filename*=UTF-8''%2E%2E%2Fx", type: "attachment", filename: "../x"),
        // filename* wins over filename, in either order.
        Case(
            header: "attachment; filename=\"EURO rates.txt\"; filename*=utf-8''%e2%82%ac%20rates.txt",
            type: "attachment",
            filename: "€ rates.txt"
        ),
        Case(
            header: "attachment; filename*=UTF-8''%E2%82%AC.txt; filename=fallback.txt",
            type: "attachment",
            filename: "€.txt"
        ),
        // An undecodable filename* falls back to filename.
        Case(
            header: "attachment; filename=fallback.txt; filename*=UTF-8''%FF%FE.txt",
            type: "attachment",
            filename: "fallback.txt"
        ),
        Case(
            header: "attachment; filename=fallback.txt; filename*=UTF-8''%E2%82",
            type: "attachment",
            filename: "fallback.txt"
        ),
        Case(
            header: "attachment; filename=fallback.txt; filename*=UTF-8''bad%G1",
            type: "attachment",
            filename: "fallback.txt"
        ),
        Case(
            header: "attachment; filename=fallback.txt; filename*=UTF-8''trailing%",
            type: "attachment",
            filename: "fallback.txt"
        ),
        Case(
            header: "attachment; filename=fallback.txt; filename*=Shift_JIS''%82%A0",
            type: "attachment",
            filename: "fallback.txt"
        ),
        Case(
            header: "attachment; filename=fallback.txt; filename*=no-quotes.txt",
            type: "attachment",
            filename: "fallback.txt"
        ),
        Case(
            header: "attachment; filename=fallback.txt; filename*=UTF-8'only-one-quote",
            type: "attachment",
            filename: "fallback.txt"
        ),
        Case(
            header: "attachment; filename=fallback.txt; filename*=UTF-8''",
            type: "attachment",
            filename: "fallback.txt"
        ),
        Case(header: "attachment; filename*=UTF-8''%FF", type: "attachment", filename: nil),
    ]

    @Test(arguments: valid)
    func parses(_ example: Case) throws {
        let parsed = try #require(ContentDisposition(parsing: example.header))
        #expect(parsed.type == example.type)
        #expect(parsed.filename == example.filename)
    }

    static let invalid: [String] = [
        "",
        "   ",
        ";",
        "; filename=foo.html",
        "filename=foo.html",
        "\"attachment\"",
        "attachment filename=foo.html",
        "attachment, inline",
        "attach\u{0}ment; filename=x",
        "attächment; filename=x",
        "{attachment}; filename=x",
    ]

    @Test(arguments: invalid)
    func rejectsInvalidType(_ header: String) {
        #expect(ContentDisposition(parsing: header) == nil)
    }

    static let extendedValues: [(String, String?)] = [
        ("UTF-8''abc", "abc"),
        ("utf8''abc", "abc"),
        ("UTF-8'en-US'%C3%A9t%C3%A9", "été"),
        (" UTF-8 ''x", "x"),
        ("ISO-8859-1''%E9t%E9", "été"),
        ("latin1''%E9", "é"),
        ("ISO-8859-1''é%E9", "éé"),
        ("ISO-8859-1''%e9%41", "éA"),
        ("ISO-8859-1''%E", nil),
        ("ISO-8859-1''%EG", nil),
        ("ISO-8859-1''%é1", nil),
        ("UTF-8''%00", "\u{0}"),
        ("UTF-8''a'b", "a'b"),
        ("UTF-8''%c3%a9", "é"),
        ("UTF-16''%00a", nil),
        ("''abc", nil),
        ("UTF-8''%C3", nil),
        ("UTF-8''%ED%A0%80", nil),  // An encoded UTF-16 surrogate is not UTF-8.
        ("UTF-8''%C0%AF", nil),  // Overlong '/' must not decode.
        ("UTF-8''%2", nil),
        ("abc", nil),
    ]

    @Test(arguments: extendedValues)
    func decodesExtendedValues(_ raw: String, _ expected: String?) {
        #expect(ContentDisposition.decodeExtendedValue(raw) == expected)
    }

    static let lenientPercent: [(String, [UInt8])] = [
        ("a%2Fb", Array("a/b".utf8)),
        ("100%", Array("100%".utf8)),
        ("%zz", Array("%zz".utf8)),
        ("%4", Array("%4".utf8)),
        ("%41%42", [0x41, 0x42]),
        ("é", [0xC3, 0xA9]),
        ("", []),
    ]

    @Test(arguments: lenientPercent)
    func percentDecodesLeniently(_ text: String, _ expected: [UInt8]) {
        #expect(ContentDisposition.percentDecodedBytes(text, strict: false) == expected)
    }

    @Test func strictPercentDecodingRejectsStrayPercent() {
        #expect(ContentDisposition.percentDecodedBytes("100%", strict: true) == nil)
        #expect(ContentDisposition.percentDecodedBytes("%4g", strict: true) == nil)
        #expect(ContentDisposition.percentDecodedBytes("%41", strict: true) == [0x41])
    }

    @Test func latin1CoversEveryByte() {
        let decoded = ContentDisposition.decodeLatin1(Array(0...255))
        #expect(decoded.unicodeScalars.map(\.value) == Array(0...255))
    }

    @Test func equatable() {
        #expect(
            ContentDisposition(parsing: "attachment; filename=a")
                == ContentDisposition(parsing: "Attachment;filename=\"a\"")
        )
        #expect(
            ContentDisposition(parsing: "attachment; filename=a") != ContentDisposition(parsing: "inline; filename=a")
        )
    }
}
