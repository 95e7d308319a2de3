import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

#if canImport(Glibc)
import Glibc
#endif

/// `DownloadManager.data(from:)` against the test server: what is requested, what is cached.
@Suite("Fetch through the cache", .timeLimit(.minutes(2)))
struct FetchTests {
    let fixture: Fixture
    let cacheDirectory: String

    init() async throws {
        var fixture = try await Fixture.make()
        cacheDirectory = (fixture.directory as NSString).deletingLastPathComponent + "/cache"
        fixture.configuration.cache.directory = cacheDirectory
        self.fixture = fixture
    }

    var server: TestServer { fixture.server }

    /// Serves `size` random bytes at `path` with these validators and extra headers.
    @discardableResult
    func serve(
        _ path: String, size: Int = 3000, seed: UInt64 = 1, etag: String? = "\"v1\"", lastModified: String? = nil,
        headers: [(String, String)] = [("Cache-Control", "max-age=60")], chunked: Bool = false
    ) -> [UInt8] {
        let body = Resource.random(size: size, seed: seed)
        server.serve(path, Resource(body: body, etag: etag, lastModified: lastModified, chunked: chunked, extraHeaders: headers))
        return body
    }

    /// Runs `body` with a manager made from the fixture's configuration (changed by `configure`), then
    /// shuts it down.
    func withManager<T>(
        configure: (inout Configuration) -> Void = { _ in }, _ body: (DownloadManager) async throws -> T
    ) async throws -> T {
        var configuration = fixture.configuration
        configure(&configuration)
        let manager = try DownloadManager(configuration: configuration)
        do {
            let result = try await body(manager)
            try await manager.shutdown()
            return result
        } catch {
            try? await manager.shutdown()
            throw error
        }
    }

    func fetch(_ manager: DownloadManager, _ path: String, headers: [(name: String, value: String)] = []) async throws -> [UInt8] {
        Array(try await manager.data(from: server.url(path), headers: headers))
    }

    func cacheFiles(_ suffix: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: cacheDirectory)) ?? []).filter { $0.hasSuffix(suffix) }.sorted()
    }

    func entry(_ path: String) -> ResponseCache.Entry? {
        ResponseCache(directory: cacheDirectory, maxBytes: .max).lookup(server.url(path))
    }

    // MARK: -

    @Test func freshHitMakesNoSecondRequest() async throws {
        defer { fixture.stop() }
        let body = serve("/fresh.json")
        let (first, second) = try await withManager { manager in
            (try await fetch(manager, "/fresh.json"), try await fetch(manager, "/fresh.json"))
        }
        // A new manager (as a new process would) also hits the disk cache.
        let third = try await withManager { try await fetch($0, "/fresh.json") }
        #expect(sha256Hex(first) == sha256Hex(body))
        #expect(sha256Hex(second) == sha256Hex(body))
        #expect(sha256Hex(third) == sha256Hex(body))
        #expect(server.requests(to: "/fresh.json").count == 1)
        let request = try #require(server.requests(to: "/fresh.json").first)
        #expect(request.header("Accept-Encoding") == "identity")
        #expect(request.header("User-Agent") == fixture.configuration.userAgent)
    }

    @Test func noCacheRevalidatesWithIfNoneMatchAndServesTheCachedBytesOn304() async throws {
        defer { fixture.stop() }
        let body = serve("/nc", headers: [("Cache-Control", "no-cache")])
        let (first, second) = try await withManager { manager in
            (try await fetch(manager, "/nc"), try await fetch(manager, "/nc"))
        }
        let requests = server.requests(to: "/nc")
        #expect(requests.count == 2)
        #expect(requests[0].header("If-None-Match") == nil)
        #expect(requests[1].header("If-None-Match") == "\"v1\"")
        #expect(requests[1].header("If-Modified-Since") == nil)
        // The 304 carried no body: only the first answer's bytes crossed the wire.
        #expect(server.bodyBytesSent(to: "/nc") == body.count)
        #expect(sha256Hex(first) == sha256Hex(body))
        #expect(sha256Hex(second) == sha256Hex(body))
    }

    @Test func lastModifiedOnlyRevalidatesWithIfModifiedSince() async throws {
        defer { fixture.stop() }
        let lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"
        let body = serve("/lm", etag: nil, lastModified: lastModified, headers: [("Cache-Control", "max-age=0")])
        let (first, second) = try await withManager { manager in
            (try await fetch(manager, "/lm"), try await fetch(manager, "/lm"))
        }
        let requests = server.requests(to: "/lm")
        #expect(requests.count == 2)
        #expect(requests[1].header("If-Modified-Since") == lastModified)
        #expect(requests[1].header("If-None-Match") == nil)
        #expect(server.bodyBytesSent(to: "/lm") == body.count)
        #expect(first == body)
        #expect(second == body)
    }

    @Test func notModifiedRefreshesFreshnessFromItsHeaders() async throws {
        defer { fixture.stop() }
        // The stored response is stale at once; the 304 says max-age=60, so the third call is a hit.
        let body = serve("/refresh", headers: [("Cache-Control", "max-age=0")])
        try await withManager { _ = try await fetch($0, "/refresh") }
        server.serve("/refresh", Resource(body: body, etag: "\"v1\"", extraHeaders: [("Cache-Control", "max-age=60")]))
        let results = try await withManager { manager in
            [try await fetch(manager, "/refresh"), try await fetch(manager, "/refresh")]
        }
        #expect(results == [body, body])
        #expect(server.requests(to: "/refresh").count == 2)
        #expect(entry("/refresh")?.metadata.headers["cache-control"] == "max-age=60")
    }

    @Test func changedResourceIsStoredAnew() async throws {
        defer { fixture.stop() }
        let v1 = serve("/changing", seed: 1, etag: "\"v1\"", headers: [("Cache-Control", "no-cache")])
        let first = try await withManager { try await fetch($0, "/changing") }
        let v2 = serve("/changing", size: 4000, seed: 2, etag: "\"v2\"", headers: [("Cache-Control", "no-cache")])
        let (second, third) = try await withManager { manager in
            (try await fetch(manager, "/changing"), try await fetch(manager, "/changing"))
        }
        #expect(first == v1)
        #expect(second == v2)
        #expect(third == v2)
        let requests = server.requests(to: "/changing")
        #expect(requests.map { $0.header("If-None-Match") } == [nil, "\"v1\"", "\"v2\""])
        #expect(entry("/changing").map { Array($0.body) } == v2)
        #expect(cacheFiles(".body").count == 1)
    }

    @Test func noStoreIsNeverStored() async throws {
        defer { fixture.stop() }
        let body = serve("/secret", headers: [("Cache-Control", "no-store, max-age=60")])
        let results = try await withManager { manager in
            [try await fetch(manager, "/secret"), try await fetch(manager, "/secret")]
        }
        #expect(results == [body, body])
        let requests = server.requests(to: "/secret")
        #expect(requests.count == 2)
        #expect(requests.allSatisfy { $0.header("If-None-Match") == nil })
        #expect(cacheFiles(".json").isEmpty)
        #expect(cacheFiles(".body").isEmpty)
    }

    @Test func requestNoStoreBypassesTheCache() async throws {
        defer { fixture.stop() }
        let body = serve("/bypass")
        let results = try await withManager { manager in
            [
                try await fetch(manager, "/bypass", headers: [("Cache-Control", "no-store")]),
                try await fetch(manager, "/bypass", headers: [("Cache-Control", "no-store")]),
            ]
        }
        #expect(results == [body, body])
        #expect(server.requests(to: "/bypass").count == 2)
        #expect(cacheFiles(".json").isEmpty)
    }

    @Test func leastRecentlyUsedEntryIsEvicted() async throws {
        defer { fixture.stop() }
        serve("/a", size: 1000, seed: 1)
        serve("/b", size: 1000, seed: 2)
        let c = serve("/c", size: 1000, seed: 3)
        try await withManager(configure: { $0.cache.maxBytes = 2500 }) { manager in
            _ = try await fetch(manager, "/a")
            _ = try await fetch(manager, "/b")
            _ = try await fetch(manager, "/a")  // a hit: a is now more recent than b
            #expect(try await fetch(manager, "/c") == c)
            _ = try await fetch(manager, "/a")
            _ = try await fetch(manager, "/c")
            _ = try await fetch(manager, "/b")  // evicted: fetched again
        }
        #expect(server.requests(to: "/a").count == 1)
        #expect(server.requests(to: "/b").count == 2)
        #expect(server.requests(to: "/c").count == 1)
        #expect(cacheFiles(".body").count == 2)
    }

    @Test func truncatedBodyFileIsAMissAndRefetched() async throws {
        defer { fixture.stop() }
        let body = serve("/damaged", size: 5000)
        try await withManager { _ = try await fetch($0, "/damaged") }
        let bodyFile = try #require(cacheFiles(".body").first)
        #expect(truncate(cacheDirectory + "/" + bodyFile, 1234) == 0)
        let again = try await withManager { try await fetch($0, "/damaged") }
        #expect(sha256Hex(again) == sha256Hex(body))
        let requests = server.requests(to: "/damaged")
        #expect(requests.count == 2)
        // The damaged entry was dropped, not revalidated.
        #expect(requests[1].header("If-None-Match") == nil)
        #expect(entry("/damaged").map { Array($0.body) } == body)
    }

    @Test(arguments: [false, true])
    func bodyOverMaxEntryBytesIsAClearErrorAndNotCached(chunked: Bool) async throws {
        defer { fixture.stop() }
        serve("/big", size: 200_000, chunked: chunked)
        let url = server.url("/big")
        let error = await #expect(throws: SwoopError.self) {
            try await withManager(configure: { $0.cache.maxEntryBytes = 100_000 }) { _ = try await fetch($0, "/big") }
        }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains(url) == true)
        #expect(error?.message.contains("download it to a file instead") == true)
        #expect(cacheFiles(".json").isEmpty)
        #expect(cacheFiles(".body").isEmpty)
    }

    @Test func notFoundNamesStatusAndURLAndCachesNothing() async throws {
        defer { fixture.stop() }
        let url = server.url("/missing")
        let error = await #expect(throws: SwoopError.self) {
            try await withManager { _ = try await fetch($0, "/missing") }
        }
        #expect(error?.code == .httpStatus)
        #expect(error?.status == 404)
        #expect(error?.message == "HTTP 404 Not Found from \(url)")
        #expect(cacheFiles(".json").isEmpty)
    }

    @Test func redirectIsFollowedAndCachedUnderTheURLAskedFor() async throws {
        defer { fixture.stop() }
        let body = serve("/new")
        server.setDefault("/old", .redirect(status: 301, location: server.url("/new")))
        let results = try await withManager { manager in
            [try await fetch(manager, "/old"), try await fetch(manager, "/old")]
        }
        #expect(results == [body, body])
        #expect(server.requests(to: "/old").count == 1)
        #expect(server.requests(to: "/new").count == 1)
        #expect(entry("/old").map { Array($0.body) } == body)
        #expect(entry("/new") == nil)
    }

    @Test func withoutACacheDirectoryEveryCallIsARequest() async throws {
        defer { fixture.stop() }
        let body = serve("/plain")
        let results = try await withManager(configure: { $0.cache.directory = nil }) { manager in
            [try await fetch(manager, "/plain"), try await fetch(manager, "/plain")]
        }
        #expect(results == [body, body])
        #expect(server.requests(to: "/plain").count == 2)
        #expect(!FileManager.default.fileExists(atPath: cacheDirectory))
    }
}
