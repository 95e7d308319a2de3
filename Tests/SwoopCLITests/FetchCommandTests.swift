import Foundation
import SwoopTesting
import Testing

/// `swoop fetch` run as a user runs it: raw bytes on stdout, one error line on stderr.
@Suite("swoop fetch (the binary)", .timeLimit(.minutes(2)))
struct FetchCommandTests {
    let server: TestServer
    let root: String
    let cache: String

    init() async throws {
        server = try await TestServer.start()
        root = scratchPath("swoop-cli")
        cache = root + "/cache"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    func fetch(_ arguments: [String]) async throws -> SwoopBinary.Result {
        try await SwoopBinary.run(["fetch"] + arguments, in: root)
    }

    func stop() {
        let server = self.server
        Task { try? await server.shutdown() }
    }

    @Test func writesTheBytesAndServesTheSecondRunFromTheCache() async throws {
        defer { stop() }
        let body = Resource.random(size: 300_000, seed: 11)
        server.serve("/data.bin", Resource(body: body, etag: "\"e1\"", extraHeaders: [("Cache-Control", "max-age=60")]))
        let first = try await fetch([server.url("/data.bin"), "--cache-dir", cache])
        #expect(first.status == 0)
        #expect(first.stderr.isEmpty)
        #expect(first.stdoutBytes.count == body.count)
        #expect(sha256Hex(first.stdoutBytes) == sha256Hex(body))

        let second = try await fetch([server.url("/data.bin"), "--cache-dir", cache])
        #expect(second.status == 0)
        #expect(sha256Hex(second.stdoutBytes) == sha256Hex(body))
        #expect(server.requests(to: "/data.bin").count == 1)
    }

    @Test func noCacheAlwaysAsksAndSendsTheHeaders() async throws {
        defer { stop() }
        let body = Resource.random(size: 1000, seed: 12)
        server.serve("/h", Resource(body: body, extraHeaders: [("Cache-Control", "max-age=60")]))
        for _ in 0..<2 {
            let result = try await fetch([server.url("/h"), "--no-cache", "-H", "X-Token: abc"])
            #expect(result.status == 0)
            #expect(result.stdoutBytes == body)
        }
        let requests = server.requests(to: "/h")
        #expect(requests.count == 2)
        #expect(requests.allSatisfy { $0.header("X-Token") == "abc" })
        #expect(!FileManager.default.fileExists(atPath: cache))
    }

    @Test func notFoundExitsFiveWithOneErrorLine() async throws {
        defer { stop() }
        let url = server.url("/missing")
        let result = try await fetch([url, "--cache-dir", cache])
        #expect(result.status == 5)
        #expect(result.stdoutBytes.isEmpty)
        #expect(result.stderrLines == ["swoop: error: HTTP 404 Not Found from \(url)"])
    }

    @Test func badHeaderIsAUsageError() async throws {
        defer { stop() }
        let result = try await fetch([server.url("/x"), "--cache-dir", cache, "-H", "no colon"])
        #expect(result.status == 2)
        #expect(result.stderrLines == ["swoop: error: invalid header 'no colon': expected 'Name: value'"])
        #expect(server.requests(to: "/x").isEmpty)
    }
}
