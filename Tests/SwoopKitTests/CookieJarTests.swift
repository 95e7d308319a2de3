import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

@Suite("CookieJar: cookies.txt and RFC 6265 matching")
struct CookieJarTests {
    typealias Cookie = CookieJar.Cookie

    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    // MARK: parsing

    struct ParseCase: Sendable, CustomTestStringConvertible {
        var text: String
        var cookies: [Cookie]
        var skipped: [Int] = []
        var testDescription: String { text.debugDescription }
    }

    @Test(arguments: [
        ParseCase(
            text: "example.com\tFALSE\t/\tFALSE\t0\tsid\tabc",
            cookies: [Cookie(domain: "example.com", includeSubdomains: false, name: "sid", value: "abc")]
        ),
        ParseCase(
            text: "# Netscape HTTP Cookie File\n\n.Example.COM\tTRUE\t/docs\tTRUE\t1800000000\ta\tb c=d\n",
            cookies: [
                Cookie(
                    domain: "example.com", includeSubdomains: true, path: "/docs", secure: true,
                    expires: Date(timeIntervalSince1970: 1_800_000_000), name: "a", value: "b c=d"
                )
            ]
        ),
        ParseCase(
            text: "#HttpOnly_h.test\tFALSE\t/\tFALSE\t0\ts\t1",
            cookies: [Cookie(domain: "h.test", includeSubdomains: false, name: "s", value: "1", httpOnly: true)]
        ),
        // CRLF, a trailing tab, a byte-order mark, lowercase flags.
        ParseCase(
            text: "\u{FEFF}h.test\ttrue\t/\tfalse\t0\tx\t1\t\r\nh.test\tFALSE\t/\tFALSE\t0\ty\t2\r\n",
            cookies: [
                Cookie(domain: "h.test", includeSubdomains: true, name: "x", value: "1"),
                Cookie(domain: "h.test", includeSubdomains: false, name: "y", value: "2"),
            ]
        ),
        // Six fields (or seven with an empty last one): an empty value.
        ParseCase(
            text: "h.test\tFALSE\t/\tFALSE\t0\tempty\nh.test\tFALSE\t/p\tFALSE\t0\tblank\t",
            cookies: [
                Cookie(domain: "h.test", includeSubdomains: false, name: "empty", value: ""),
                Cookie(domain: "h.test", includeSubdomains: false, path: "/p", name: "blank", value: ""),
            ]
        ),
        // An empty path is `/`.
        ParseCase(
            text: "h.test\tFALSE\t\tFALSE\t0\tn\tv",
            cookies: [Cookie(domain: "h.test", includeSubdomains: false, path: "/", name: "n", value: "v")]
        ),
        // The same domain, path and name again: the later line wins, in the first one's place.
        ParseCase(
            text: "h.test\tFALSE\t/\tFALSE\t0\tn\told\nh.test\tFALSE\t/\tFALSE\t0\tm\t1\nh.test\tFALSE\t/\tFALSE\t0\tn\tnew",
            cookies: [
                Cookie(domain: "h.test", includeSubdomains: false, name: "n", value: "new"),
                Cookie(domain: "h.test", includeSubdomains: false, name: "m", value: "1"),
            ]
        ),
        // Malformed lines are skipped and counted; good lines around them are kept.
        ParseCase(
            text: """
                h.test\tFALSE\t/\tFALSE\t0\tok\t1
                not a cookie line
                h.test\tMAYBE\t/\tFALSE\t0\tn\tv
                h.test\tFALSE\t/\tNO\t0\tn\tv
                h.test\tFALSE\t/\tFALSE\tsoon\tn\tv
                \tFALSE\t/\tFALSE\t0\tn\tv
                h.test\tFALSE\t/\tFALSE\t0\t\tv
                h.test\tFALSE\t/\tFALSE\t0\tn\tv\textra
                h.test\tFALSE\t/\tFALSE\t0
                Set-Cookie: a=b
                   
                h.test\tFALSE\t/\tFALSE\t0\tlast\t2
                """,
            cookies: [
                Cookie(domain: "h.test", includeSubdomains: false, name: "ok", value: "1"),
                Cookie(domain: "h.test", includeSubdomains: false, name: "last", value: "2"),
            ],
            skipped: [2, 3, 4, 5, 6, 7, 8, 9, 10]
        ),
        ParseCase(text: "", cookies: []),
        ParseCase(text: "# only a comment\n\n", cookies: []),
    ])
    func parses(_ test: ParseCase) {
        let jar = CookieJar(parsing: test.text)
        #expect(jar.cookies == test.cookies)
        #expect(jar.skippedLines == test.skipped)
    }

    // MARK: matching

    struct MatchCase: Sendable, CustomTestStringConvertible {
        var line: String
        var url: String
        var sent: Bool
        var testDescription: String { "\(line.replacingOccurrences(of: "\t", with: " ")) → \(url)" }
    }

    /// domain, subdomains, path, secure, expiry; the cookie is always `n=v`.
    static func line(_ domain: String, _ sub: Bool = false, _ path: String = "/", secure: Bool = false, expiry: Int = 0) -> String {
        "\(domain)\t\(sub ? "TRUE" : "FALSE")\t\(path)\t\(secure ? "TRUE" : "FALSE")\t\(expiry)\tn\tv"
    }

    @Test(arguments: [
        // Host-only (FALSE): exactly the host, case-insensitively, with or without a trailing dot.
        MatchCase(line: line("example.com"), url: "http://example.com/", sent: true),
        MatchCase(line: line("example.com"), url: "http://EXAMPLE.com/x", sent: true),
        MatchCase(line: line("example.com"), url: "http://example.com./x", sent: true),
        MatchCase(line: line("example.com"), url: "http://www.example.com/", sent: false),
        MatchCase(line: line(".example.com"), url: "http://www.example.com/", sent: false),  // the flag decides
        MatchCase(line: line("example.com"), url: "http://example.com:8080/", sent: true),  // ports do not matter
        // Subdomains (TRUE): the domain and every host below it, never a mere suffix.
        MatchCase(line: line(".example.com", true), url: "http://example.com/", sent: true),
        MatchCase(line: line("example.com", true), url: "http://a.b.example.com/", sent: true),
        MatchCase(line: line("example.com", true), url: "http://badexample.com/", sent: false),
        MatchCase(line: line("example.com", true), url: "http://example.com.evil.test/", sent: false),
        MatchCase(line: line("www.example.com", true), url: "http://example.com/", sent: false),
        MatchCase(line: line("other.test", true), url: "http://example.com/", sent: false),
        // IP addresses match only exactly.
        MatchCase(line: line("127.0.0.1"), url: "http://127.0.0.1:9/", sent: true),
        MatchCase(line: line("0.0.1", true), url: "http://127.0.0.1/", sent: false),
        MatchCase(line: line("127.0.0.1", true), url: "http://127.0.0.2/", sent: false),
        MatchCase(line: line("::1"), url: "http://[::1]:8080/", sent: true),
        MatchCase(line: line("[::1]"), url: "http://[::1]/", sent: true),
        // Paths: a prefix that ends at a `/` boundary.
        MatchCase(line: line("h.test", false, "/docs"), url: "http://h.test/docs", sent: true),
        MatchCase(line: line("h.test", false, "/docs"), url: "http://h.test/docs/a.iso", sent: true),
        MatchCase(line: line("h.test", false, "/docs"), url: "http://h.test/docsets/a.iso", sent: false),
        MatchCase(line: line("h.test", false, "/docs/"), url: "http://h.test/docs/a", sent: true),
        MatchCase(line: line("h.test", false, "/docs/"), url: "http://h.test/docs", sent: false),
        MatchCase(line: line("h.test", false, "/docs"), url: "http://h.test/", sent: false),
        MatchCase(line: line("h.test", false, "/docs"), url: "http://h.test/Docs/a", sent: false),  // case-sensitive
        MatchCase(line: line("h.test", false, "/"), url: "http://h.test", sent: true),  // no path is `/`
        MatchCase(line: line("h.test", false, "/docs"), url: "http://h.test/docs?x=/y", sent: true),
        MatchCase(line: line("h.test", false, "/a%20b"), url: "http://h.test/a%20b/c", sent: true),
        // Secure: https only.
        MatchCase(line: line("h.test", secure: true), url: "https://h.test/", sent: true),
        MatchCase(line: line("h.test", secure: true), url: "http://h.test/", sent: false),
        MatchCase(line: line("h.test"), url: "https://h.test/", sent: true),
        // Expiry: 0 is a session cookie; otherwise it must be after now (1_700_000_000).
        MatchCase(line: line("h.test", expiry: 1_700_000_001), url: "http://h.test/", sent: true),
        MatchCase(line: line("h.test", expiry: 1_700_000_000), url: "http://h.test/", sent: false),
        MatchCase(line: line("h.test", expiry: 1), url: "http://h.test/", sent: false),
        MatchCase(line: line("h.test", expiry: -5), url: "http://h.test/", sent: false),
    ])
    func matches(_ test: MatchCase) throws {
        let jar = CookieJar(parsing: test.line)
        #expect(jar.skippedLines.isEmpty)
        let url = try #require(URL(string: test.url))
        #expect(jar.headerValue(for: url, now: Self.now) == (test.sent ? "n=v" : nil))
    }

    @Test func longerPathsFirstThenFileOrder() throws {
        let jar = CookieJar(parsing: """
            h.test\tFALSE\t/\tFALSE\t0\troot1\t1
            h.test\tFALSE\t/a/b\tFALSE\t0\tdeep\t2
            h.test\tFALSE\t/a\tFALSE\t0\tmid\t3
            h.test\tFALSE\t/\tFALSE\t0\troot2\t4
            h.test\tFALSE\t/other\tFALSE\t0\tother\t5
            other.test\tFALSE\t/\tFALSE\t0\tforeign\t6
            """)
        let url = try #require(URL(string: "http://h.test/a/b/file"))
        #expect(jar.headerValue(for: url, now: Self.now) == "deep=2; mid=3; root1=1; root2=4")
    }

    @Test func aMissingFileIsAnErrorNamingIt() {
        let path = scratchPath("no-such-cookies", suffix: ".txt")
        #expect {
            try CookieJar(contentsOfFile: path)
        } throws: { error in
            let error = error as? SwoopError
            return error?.code == .fileSystem && error?.message == "cannot read cookie file \(path): No such file or directory"
        }
    }

    @Test func aFileIsReadWithItsSkippedLines() throws {
        let path = scratchPath("cookies", suffix: ".txt")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "bad\nh.test\tFALSE\t/\tFALSE\t0\tn\tv\n".write(toFile: path, atomically: true, encoding: .utf8)
        let jar = try CookieJar(contentsOfFile: path)
        #expect(jar.cookies.map(\.name) == ["n"])
        #expect(jar.skippedLines == [1])
    }
}
