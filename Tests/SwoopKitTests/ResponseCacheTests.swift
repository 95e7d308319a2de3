import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

#if canImport(Glibc)
import Glibc
#endif

/// The disk cache on its own: atomic entries, verification on read, LRU eviction.
@Suite("ResponseCache")
struct ResponseCacheTests {
    let directory = scratchPath("swoop-cache")

    func cache(maxBytes: Int = 1 << 20) throws -> ResponseCache {
        let cache = ResponseCache(directory: directory, maxBytes: maxBytes)
        try cache.prepare()
        return cache
    }

    func files() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted() }

    func at(_ seconds: TimeInterval) -> Date { Date(timeIntervalSince1970: 1_700_000_000 + seconds) }

    @discardableResult
    func put(_ cache: ResponseCache, _ url: String, _ body: [UInt8], at time: TimeInterval) throws -> ResponseCache.Metadata {
        try cache.store(
            url: url, status: 200, headers: ["etag": "\"v1\""], body: Data(body), requestTime: at(time), responseTime: at(time),
            now: at(time)
        )
    }

    @Test func storesAndReadsBackExactBytes() throws {
        let cache = try cache()
        let body = Resource.random(size: 10_000, seed: 3)
        let stored = try put(cache, "http://example.test/a", body, at: 0)
        let entry = try #require(cache.lookup("http://example.test/a"))
        #expect(sha256Hex(Array(entry.body)) == sha256Hex(body))
        #expect(entry.metadata == stored)
        #expect(entry.metadata.size == body.count)
        #expect(entry.metadata.headers == ["etag": "\"v1\""])
        let key = ResponseCache.key(for: "http://example.test/a")
        #expect(files() == [key + ".json", stored.bodyFile].sorted())
        #expect(cache.lookup("http://example.test/other") == nil)
    }

    @Test func replacingAnEntryLeavesOneBody() throws {
        let cache = try cache()
        try put(cache, "http://example.test/a", [1, 2, 3], at: 0)
        let second = try put(cache, "http://example.test/a", [4, 5, 6, 7], at: 1)
        #expect(cache.lookup("http://example.test/a")?.body == Data([4, 5, 6, 7]))
        #expect(files().filter { $0.hasSuffix(".body") } == [second.bodyFile])
    }

    enum Damage: String, CaseIterable, Sendable {
        case truncatedBody, extendedBody, sameSizeDifferentBody, missingBody, garbageMetadata, wrongURLInMetadata
    }

    @Test(arguments: Damage.allCases)
    func damagedEntryIsAMissAndRemoved(_ damage: Damage) throws {
        let cache = try cache()
        let url = "http://example.test/a"
        let stored = try put(cache, url, Resource.random(size: 4096, seed: 9), at: 0)
        let bodyPath = directory + "/" + stored.bodyFile
        let metadataPath = directory + "/" + ResponseCache.key(for: url) + ".json"
        switch damage {
        case .truncatedBody: #expect(truncate(bodyPath, 100) == 0)
        case .extendedBody: try Data(Resource.random(size: 5000, seed: 1)).write(to: URL(fileURLWithPath: bodyPath))
        case .sameSizeDifferentBody: try Data(Resource.random(size: 4096, seed: 2)).write(to: URL(fileURLWithPath: bodyPath))
        case .missingBody: #expect(unlink(bodyPath) == 0)
        case .garbageMetadata: try Data("{not json".utf8).write(to: URL(fileURLWithPath: metadataPath))
        case .wrongURLInMetadata:
            let text = try String(contentsOfFile: metadataPath, encoding: .utf8)
            try Data(text.replacingOccurrences(of: "example.test", with: "evil.test").utf8).write(to: URL(fileURLWithPath: metadataPath))
        }
        #expect(cache.lookup(url) == nil)
        #expect(!files().contains(ResponseCache.key(for: url) + ".json"))
        #expect(cache.lookup(url) == nil)
    }

    @Test func metadataCannotPointOutsideTheCache() throws {
        let cache = try cache()
        let url = "http://example.test/a"
        let outside = directory + "-outside.body"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: outside))
        defer { unlink(outside) }
        var stored = try put(cache, url, [1, 2, 3], at: 0)
        stored.bodyFile = "../" + (outside as NSString).lastPathComponent
        try cache.update(stored)
        #expect(cache.lookup(url) == nil)
        #expect(FileManager.default.fileExists(atPath: outside))
    }

    @Test func evictsLeastRecentlyUsedBeyondMaxBytes() throws {
        let cache = try cache(maxBytes: 250)
        try put(cache, "http://example.test/a", Array(repeating: 1, count: 100), at: 0)
        try put(cache, "http://example.test/b", Array(repeating: 2, count: 100), at: 1)
        // Reading a (recording the access) makes b the least recently used.
        var a = try #require(cache.lookup("http://example.test/a")).metadata
        a.lastAccess = at(2)
        try cache.update(a)
        try put(cache, "http://example.test/c", Array(repeating: 3, count: 100), at: 3)
        #expect(cache.lookup("http://example.test/a") != nil)
        #expect(cache.lookup("http://example.test/b") == nil)
        #expect(cache.lookup("http://example.test/c") != nil)
        #expect(files().filter { $0.hasSuffix(".body") }.count == 2)
    }

    /// Eviction counts what the bodies hold: metadata claiming Int.max bytes (a damaged file)
    /// trapped the sum; now the entry is a miss and the others stay.
    @Test func aSizeInDamagedMetadataIsNotTakenForTheBodys() throws {
        let cache = try cache(maxBytes: 250)
        var damaged = try put(cache, "http://example.test/a", Array(repeating: 1, count: 100), at: 0)
        damaged.size = .max
        try cache.update(damaged)
        try put(cache, "http://example.test/b", Array(repeating: 2, count: 100), at: 1)
        cache.evict()
        #expect(cache.lookup("http://example.test/b") != nil)
        #expect(cache.lookup("http://example.test/a") == nil)
        #expect(files().filter { $0.hasSuffix(".body") }.count == 1)
    }

    @Test func evictionKeepsTheNewestEvenWhenAloneItFillsTheCache() throws {
        let cache = try cache(maxBytes: 150)
        try put(cache, "http://example.test/a", Array(repeating: 1, count: 100), at: 0)
        try put(cache, "http://example.test/b", Array(repeating: 2, count: 120), at: 1)
        #expect(cache.lookup("http://example.test/a") == nil)
        #expect(cache.lookup("http://example.test/b") != nil)
    }

    @Test func oldOrphansAndTemporaryFilesAreCollectedYoungOnesKept() throws {
        let cache = try cache()
        try put(cache, "http://example.test/a", [1], at: 0)
        let oldOrphan = directory + "/" + ResponseCache.key(for: "x") + ".00.body"
        let youngOrphan = directory + "/" + ResponseCache.key(for: "y") + ".00.body"
        let oldTemporary = directory + "/.tmp-0000"
        for path in [oldOrphan, youngOrphan, oldTemporary] { try Data([0]).write(to: URL(fileURLWithPath: path)) }
        let old = Date().addingTimeInterval(-2 * ResponseCache.orphanAge)
        for path in [oldOrphan, oldTemporary] {
            try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: path)
        }
        cache.evict()
        #expect(!FileManager.default.fileExists(atPath: oldOrphan))
        #expect(!FileManager.default.fileExists(atPath: oldTemporary))
        #expect(FileManager.default.fileExists(atPath: youngOrphan))
        #expect(cache.lookup("http://example.test/a") != nil)
    }

    @Test func unwritableDirectoryIsAnErrorNamingThePath() throws {
        let file = directory + "-file"
        try Data().write(to: URL(fileURLWithPath: file))
        defer { unlink(file) }
        let cache = ResponseCache(directory: file + "/sub", maxBytes: 100)
        let error = #expect(throws: SwoopError.self) { try cache.prepare() }
        #expect(error?.code == .fileSystem)
        #expect(error?.message.contains(file + "/sub") == true)
    }
}
