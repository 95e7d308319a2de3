import Foundation
import SwoopTesting
import Testing

/// `swoop get --load-cookies / --netrc-file` run as a user runs them: two hosts, a redirect between
/// them, and the headers each one saw.
@Suite("swoop get with cookies and netrc (the binary)", .timeLimit(.minutes(2)))
struct CredentialsCommandTests {
    let first: TestServer
    let second: TestServer
    let root: String
    let out: String
    let state: String

    init() async throws {
        first = try await TestServer.start(host: "127.0.0.1")
        second = try await TestServer.start(host: "127.0.0.2")
        (root, out, state) = try SwoopBinary.workspace("swoop-cli")
    }

    func get(_ arguments: [String]) async throws -> SwoopBinary.Result {
        try await SwoopBinary.run(["get", "--state-dir", state, "-d", out, "--retry-wait", "0.01"] + arguments, in: root)
    }

    func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
        let path = root + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    static func basic(_ pair: String) -> String { "Basic " + Data(pair.utf8).base64EncodedString() }

    func stop() {
        let servers = [first, second]
        Task { for server in servers { try? await server.shutdown() } }
    }

    @Test func cookiesAndLoginsGoOnlyToTheirHosts() async throws {
        defer { stop() }
        let body = Resource.random(size: 3000, seed: 5)
        second.serve("/file.bin", Resource(body: body, etag: "\"s\""))
        first.setDefault("/start", .redirect(status: 302, location: second.url("/file.bin")))
        let cookies = try write("cookies.txt", """
            # Netscape HTTP Cookie File
            127.0.0.1\tFALSE\t/\tFALSE\t0\tone\t1
            127.0.0.2\tFALSE\t/\tFALSE\t0\ttwo\t2\r
            127.0.0.2\tFALSE\t/elsewhere\tFALSE\t0\tpath\tno\r

            """)
        let netrc = try write("netrc", "machine 127.0.0.1\n  login alice\n  password \"a b\"\nmachine 127.0.0.2 login bob password pb\n")
        let result = try await get([
            "--load-cookies", cookies, "--netrc-file", netrc, "-H", "Authorization: Bearer own", first.url("/start"),
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
        #expect(sha256Hex(file: out + "/start") == sha256Hex(body))
        let one = try #require(first.requests(to: "/start").first)
        let two = try #require(second.requests(to: "/file.bin").first)
        #expect(one.header("Cookie") == "one=1")
        #expect(one.header("Authorization") == "Bearer own")
        #expect(two.header("Cookie") == "two=2")
        #expect(two.header("Authorization") == Self.basic("bob:pb"))
    }

    @Test func theNetrcLoginIsSentWhenNoAuthorizationIsGiven() async throws {
        defer { stop() }
        first.serve("/a.bin", Resource(body: Array("hello".utf8), etag: "\"a\""))
        let netrc = try write("netrc", "machine 127.0.0.1 login alice password \"a b\"\n")
        let result = try await get(["--netrc-file", netrc, first.url("/a.bin")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(first.requests(to: "/a.bin").first?.header("Authorization") == Self.basic("alice:a b"))
    }

    @Test(arguments: ["--load-cookies", "--netrc-file"])
    func aMissingFileIsExitThreeWithOneLineAndNoState(option: String) async throws {
        defer { stop() }
        let missing = root + "/missing.txt"
        let result = try await get([option, missing, first.url("/a.bin")])
        let what = option == "--load-cookies" ? "cookie file" : "netrc file"
        #expect(result.status == 3)
        #expect(result.stderrLines == ["swoop: error: cannot read \(what) \(missing): No such file or directory"])
        #expect(result.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: state))
        #expect(first.requests.isEmpty)
    }

    @Test func aMalformedNetrcIsExitTwoNamingTheLine() async throws {
        defer { stop() }
        let netrc = try write("netrc", "machine 127.0.0.1\nlogin\n")
        let result = try await get(["--netrc-file", netrc, first.url("/a.bin")])
        #expect(result.status == 2)
        #expect(result.stderrLines == ["swoop: error: \(netrc):2: 'login' without a value"])
        #expect(first.requests.isEmpty)
    }

    @Test func warningsForSkippedCookieLinesAndAnOpenNetrc() async throws {
        defer { stop() }
        first.serve("/a.bin", Resource(body: Array("hello".utf8), etag: "\"a\""))
        let cookies = try write("cookies.txt", "junk\n127.0.0.1\tFALSE\t/\tFALSE\t0\tok\t1\nmore junk\n")
        let netrc = try write("netrc", "machine 127.0.0.1 login u password p\n", mode: 0o644)
        let result = try await get(["--load-cookies", cookies, "--netrc-file", netrc, first.url("/a.bin")])
        #expect(result.status == 0)
        #expect(result.stderrLines == [
            "swoop: warning: \(cookies):1: skipped a malformed cookie line (and 1 more)",
            "swoop: warning: \(netrc) is open to other users (mode 644): run chmod 600 on it",
        ])
        let request = try #require(first.requests(to: "/a.bin").first)
        #expect(request.header("Cookie") == "ok=1")
        #expect(request.header("Authorization") == Self.basic("u:p"))
    }
}
