import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

@Suite("Credentials: cookies and netrc per host, across redirects", .timeLimit(.minutes(2)))
struct CredentialsTests {
    typealias Headers = [(name: String, value: String)]

    static func basic(_ pair: String) -> String { "Basic " + Data(pair.utf8).base64EncodedString() }

    static func credentials(cookies: String = "", netrc: String = "") throws -> Configuration.Credentials {
        var credentials = Configuration.Credentials()
        credentials.cookies = CookieJar(parsing: cookies)
        credentials.netrc = try Netrc(parsing: netrc)
        return credentials
    }

    // MARK: one hop (pure)

    struct HopCase: Sendable, CustomTestStringConvertible {
        var name: String
        var url: String
        var headers: [String]
        var expected: [String]
        var testDescription: String { name }
    }

    static let jar = """
        h.test\tFALSE\t/\tFALSE\t0\tsid\tjar
        h.test\tFALSE\t/\tFALSE\t0\ttheme\tdark
        other.test\tFALSE\t/\tFALSE\t0\tforeign\t1
        """
    static let logins = "machine h.test login u password p"

    @Test(arguments: [
        HopCase(name: "nothing of the caller's", url: "http://h.test/f", headers: ["X-A: 1"], expected: [
            "X-A: 1", "Cookie: sid=jar; theme=dark", "Authorization: \(basic("u:p"))",
        ]),
        HopCase(name: "the caller's cookies first; a name the caller sets is not repeated", url: "http://h.test/f",
                headers: ["cookie: sid=mine;x=2"], expected: [
            "cookie: sid=mine;x=2; theme=dark", "Authorization: \(basic("u:p"))",
        ]),
        HopCase(name: "every jar cookie named by the caller: the header is the caller's", url: "http://h.test/f",
                headers: ["Cookie: theme=light; sid=mine"], expected: [
            "Cookie: theme=light; sid=mine", "Authorization: \(basic("u:p"))",
        ]),
        HopCase(name: "an empty caller Cookie is replaced", url: "http://h.test/f", headers: ["Cookie: ; "], expected: [
            "Cookie: sid=jar; theme=dark", "Authorization: \(basic("u:p"))",
        ]),
        HopCase(name: "the caller's Authorization wins", url: "http://h.test/f", headers: ["authorization: Bearer t"],
                expected: ["authorization: Bearer t", "Cookie: sid=jar; theme=dark"]),
        HopCase(name: "another host: its cookie, no login", url: "https://other.test/", headers: [],
                expected: ["Cookie: foreign=1"]),
        HopCase(name: "a host with nothing", url: "http://third.test/", headers: ["Cookie: c=1"], expected: ["Cookie: c=1"]),
    ])
    func oneHop(_ test: HopCase) throws {
        let credentials = try Self.credentials(cookies: Self.jar, netrc: Self.logins)
        let url = try #require(URL(string: test.url))
        let headers = try HeaderPairs.parse(test.headers)
        let result = credentials.headers(for: url, adding: headers).map { "\($0.name): \($0.value)" }
        #expect(result == test.expected)
    }

    @Test func noCredentialsChangeNothing() throws {
        let url = try #require(URL(string: "http://h.test/"))
        let result = Configuration.Credentials().headers(for: url, adding: [("Cookie", "a=1"), ("X", "y")])
        #expect(result.map(\.name) == ["Cookie", "X"] && result.map(\.value) == ["a=1", "y"])
    }

    // MARK: the engine, two hosts and a redirect between them

    struct TwoHosts {
        let f: Fixture
        let other: TestServer
        let body: [UInt8]

        /// 127.0.0.1/start redirects to 127.0.0.2/file.bin.
        static func make() async throws -> TwoHosts {
            let f = try await Fixture.make(host: "127.0.0.1")
            let other = try await TestServer.start(host: "127.0.0.2")
            let body = Resource.random(size: 4096, seed: 11)
            other.serve("/file.bin", Resource(body: body, etag: "\"o\""))
            f.server.setDefault("/start", .redirect(status: 302, location: other.url("/file.bin")))
            return TwoHosts(f: f, other: other, body: body)
        }

        func run(_ credentials: Configuration.Credentials, headers: Headers = []) async throws -> (first: RecordedRequest, second: RecordedRequest) {
            var configuration = f.configuration
            configuration.credentials = credentials
            var request = try f.request("/start")
            request.headers = headers
            _ = try await f.download(request, configuration: configuration).result.get()
            #expect(sha256Hex(file: f.path("start")) == sha256Hex(body))
            let first = try #require(f.server.requests(to: "/start").first)
            let second = try #require(other.requests(to: "/file.bin").first)
            return (first, second)
        }

        func stop() {
            f.stop()
            let other = self.other
            Task { try? await other.shutdown() }
        }
    }

    static let twoHostJar = """
        127.0.0.1\tFALSE\t/\tFALSE\t0\tfirst\t1
        #HttpOnly_127.0.0.2\tFALSE\t/\tFALSE\t0\tsecond\t2
        127.0.0.2\tFALSE\t/\tTRUE\t0\tsecure\tnever-over-http
        """

    @Test func eachHostGetsItsOwnCookiesAndLogin() async throws {
        let hosts = try await TwoHosts.make()
        defer { hosts.stop() }
        let credentials = try Self.credentials(
            cookies: Self.twoHostJar,
            netrc: "machine 127.0.0.1 login one password p1\nmachine 127.0.0.2 login two password p2"
        )
        let (first, second) = try await hosts.run(credentials)
        #expect(first.header("Cookie") == "first=1")
        #expect(first.header("Authorization") == Self.basic("one:p1"))
        #expect(second.header("Cookie") == "second=2")
        #expect(second.header("Authorization") == Self.basic("two:p2"))
        #expect(second.headers.filter { $0.name.lowercased() == "cookie" || $0.name.lowercased() == "authorization" }.count == 2)
    }

    @Test func theCallersHeadersStayWithTheFirstHostAndTheSecondGetsItsNetrcEntry() async throws {
        let hosts = try await TwoHosts.make()
        defer { hosts.stop() }
        let credentials = try Self.credentials(
            cookies: Self.twoHostJar,
            netrc: "machine 127.0.0.1 login one password p1\nmachine 127.0.0.2 login two password p2"
        )
        let (first, second) = try await hosts.run(
            credentials, headers: [("Authorization", "Bearer mine"), ("Cookie", "own=0")]
        )
        #expect(first.header("Authorization") == "Bearer mine")
        #expect(first.header("Cookie") == "own=0; first=1")
        #expect(second.header("Authorization") == Self.basic("two:p2"))
        #expect(second.header("Cookie") == "second=2")
    }

    @Test func aHostWithNoEntryGetsNothing() async throws {
        let hosts = try await TwoHosts.make()
        defer { hosts.stop() }
        let credentials = try Self.credentials(
            cookies: "127.0.0.1\tTRUE\t/\tFALSE\t0\tfirst\t1",
            netrc: "machine 127.0.0.1 login one password p1"
        )
        let (first, second) = try await hosts.run(credentials)
        #expect(first.header("Cookie") == "first=1")
        #expect(first.header("Authorization") == Self.basic("one:p1"))
        #expect(second.header("Cookie") == nil)
        #expect(second.header("Authorization") == nil)
    }
}

/// `Name: value` strings as `-H` gives them, for tables.
enum HeaderPairs {
    static func parse(_ lines: [String]) throws -> [(name: String, value: String)] {
        try lines.map { line in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { throw SwoopError(.invalidArgument, "bad header \(line)") }
            return (name: String(parts[0]), value: parts[1].trimmingCharacters(in: .whitespaces))
        }
    }
}
