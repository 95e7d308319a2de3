import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

@Suite("Netrc: the .netrc format and lookup by host")
struct NetrcTests {
    typealias Entry = Netrc.Entry

    struct ParseCase: Sendable, CustomTestStringConvertible {
        var text: String
        var entries: [Entry]
        var testDescription: String { text.debugDescription }
    }

    @Test(arguments: [
        ParseCase(text: "machine h.test login u password p", entries: [Entry(machine: "h.test", login: "u", password: "p")]),
        // Any whitespace separates tokens, newlines and CRLF included; fields in any order.
        ParseCase(
            text: "machine\th.test\r\n  password p\r\n\tlogin u\n  account acct\n\nmachine other.test\nlogin v",
            entries: [
                Entry(machine: "h.test", login: "u", password: "p", account: "acct"),
                Entry(machine: "other.test", login: "v"),
            ]
        ),
        ParseCase(
            text: "machine a.test login a password 1\ndefault login anon password guest",
            entries: [Entry(machine: "a.test", login: "a", password: "1"), Entry(machine: nil, login: "anon", password: "guest")]
        ),
        // Quoted values as curl reads them.
        ParseCase(
            text: #"machine h.test login "two words" password "a\"b\\c\td""#,
            entries: [Entry(machine: "h.test", login: "two words", password: "a\"b\\c\td")]
        ),
        ParseCase(text: #"machine h.test login "" password p"#, entries: [Entry(machine: "h.test", login: "", password: "p")]),
        // Comment lines; a `#` inside a line is part of a value.
        ParseCase(
            text: "# my logins\n  # indented\nmachine h.test login u password pa#ss",
            entries: [Entry(machine: "h.test", login: "u", password: "pa#ss")]
        ),
        ParseCase(text: "machine h.test login u password #secret", entries: [Entry(machine: "h.test", login: "u", password: "#secret")]),
        // A macro runs to the first blank line and is not read as tokens.
        ParseCase(
            text: "machine ftp.test login f password x\nmacdef init\ncd /pub\nlogin evil password evil\n\nmachine h.test login u password p",
            entries: [Entry(machine: "ftp.test", login: "f", password: "x"), Entry(machine: "h.test", login: "u", password: "p")]
        ),
        ParseCase(
            text: "machine h.test login u\nmacdef m\r\nbinary\r\n \r\npassword p",
            entries: [Entry(machine: "h.test", login: "u", password: "p")]
        ),
        ParseCase(text: "macdef m\nmachine never login never", entries: []),
        // Unknown words are ignored, as curl ignores them.
        ParseCase(text: "machine h.test port 21 login u password p", entries: [Entry(machine: "h.test", login: "u", password: "p")]),
        ParseCase(text: "\u{FEFF}machine h.test login u", entries: [Entry(machine: "h.test", login: "u")]),
        ParseCase(text: "", entries: []),
        ParseCase(text: "\n  \n# nothing\n", entries: []),
    ])
    func parses(_ test: ParseCase) throws {
        #expect(try Netrc(parsing: test.text).entries == test.entries)
    }

    @Test(arguments: [
        ("machine", "/home/u/.netrc:1: 'machine' without a value"),
        ("machine h.test\nlogin u\npassword", "/home/u/.netrc:3: 'password' without a value"),
        ("login u password p", "/home/u/.netrc:1: 'login' before any 'machine' or 'default'"),
        ("machine h.test\n login \"open", "/home/u/.netrc:2: unterminated quoted value"),
        ("machine h.test login \"line\nbreak\"", "/home/u/.netrc:1: unterminated quoted value"),
    ])
    func malformedTextIsAnErrorNamingTheLine(text: String, message: String) {
        #expect {
            try Netrc(parsing: text, source: "/home/u/.netrc")
        } throws: { error in
            (error as? SwoopError)?.code == .invalidArgument && (error as? SwoopError)?.message == message
        }
    }

    static let file = """
        machine A.test login a password pa
        machine b.test login b password pb
        machine a.test login second password never
        machine nologin.test password p
        machine [::1] login six password p6
        default login anon password guest
        machine after.test login late password pl
        """

    @Test(arguments: [
        ("a.test", "a:pa"),  // the first entry of a name wins; names compare case-insensitively
        ("A.TEST", "a:pa"),
        ("b.test", "b:pb"),
        ("after.test", "late:pl"),  // a machine after `default` is still found by name
        ("::1", "six:p6"),
        ("[::1]", "six:p6"),
        ("c.test", "anon:guest"),  // everything else gets `default`
        ("sub.a.test", "anon:guest"),  // no subdomain matching
    ])
    func looksUpByHost(host: String, credentials: String) throws {
        let netrc = try Netrc(parsing: Self.file)
        #expect(netrc.authorization(for: host) == "Basic " + Data(credentials.utf8).base64EncodedString())
    }

    @Test func noLoginNoAuthorizationAndNoDefaultNoEntry() throws {
        let netrc = try Netrc(parsing: "machine nologin.test password p\nmachine onlylogin.test login u")
        #expect(netrc.authorization(for: "nologin.test") == nil)
        #expect(netrc.authorization(for: "onlylogin.test") == "Basic dTo=")  // "u:"
        #expect(netrc.entry(for: "elsewhere.test") == nil)
        #expect(netrc.authorization(for: "elsewhere.test") == nil)
    }

    @Test func basicAuthorizationIsUTF8Base64() {
        #expect(Entry(machine: "h", login: "Aladdin", password: "open sesame").basicAuthorization == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        #expect(Entry(machine: "h", login: "jürgen", password: "ä").basicAuthorization == "Basic asO8cmdlbjrDpA==")
    }

    @Test func aMissingFileIsAnErrorNamingIt() {
        let path = scratchPath("no-such-netrc")
        #expect {
            try Netrc(contentsOfFile: path)
        } throws: { error in
            (error as? SwoopError)?.message == "cannot read netrc file \(path): No such file or directory"
        }
    }

    @Test func defaultPathIsInHome() {
        #expect(Netrc.defaultPath(environment: ["HOME": "/home/u"]) == "/home/u/.netrc")
    }
}
