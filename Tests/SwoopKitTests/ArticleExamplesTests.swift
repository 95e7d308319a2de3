import Foundation
import SwoopStore
import SwoopTesting
import Testing

@testable import SwoopKit

// The examples of Sources/SwoopKit/Docs.docc/ManagingDownloads.md, compiled and run here against
// the test server. Each function's body is the article's code block, word for word: change both.

/// "Queue many downloads" in the article.
func queueManyDownloads(_ urls: [String], into directory: String, stateDirectory: String) async throws -> [Download] {
    var configuration = Configuration()
    configuration.queue.maxConcurrentDownloads = 4
    configuration.queue.maxPerHost = 2
    let store = try SQLiteDownloadStore(directory: stateDirectory)
    let manager = try DownloadManager(configuration: configuration, store: store)

    let events = manager.events()
    let runner = Task { await manager.run() }
    let ids = try await manager.add(contentsOf: urls.map { try DownloadRequest(url: $0, directory: directory) })

    var finished: [Download] = []
    for await event in events {
        switch event {
        case .progress(let download):
            print(download.url, download.fractionCompleted ?? 0)
        case .completed(let download), .alreadyComplete(let download):
            finished.append(download)
        case .failed(let download, let error):
            print(download.url, "failed:", error.message)
            finished.append(download)
        default:
            break
        }
        if finished.count == ids.count { break }
    }
    try await manager.shutdown()
    await runner.value
    return finished
}

/// "Pause, resume and inspect" in the article.
func pauseAndResume(_ url: String, into directory: String) async throws -> DownloadStats {
    let manager = try DownloadManager.ephemeral()
    let runner = Task { await manager.run() }
    let id = try await manager.add(DownloadRequest(url: url, directory: directory))

    try await manager.pause(id)                  // progress saved; the download is `paused`
    let paused = try await manager.download(id: id)
    print(paused.state, paused.completedBytes)

    try await manager.resume(id)                 // back in the queue, continues from its bytes
    await manager.waitUntilIdle()
    let stats = await manager.stats()            // active, waiting, completed, failed, speed
    try await manager.shutdown()
    await runner.value
    return stats
}

/// "Small files through the cache" in the article.
func fetchThroughTheCache(_ url: String, cacheDirectory: String) async throws -> (Data, Data) {
    var configuration = Configuration()
    configuration.cache.directory = cacheDirectory
    let manager = try DownloadManager.ephemeral(configuration: configuration)
    let first = try await manager.data(from: url)    // from the server; stored if cacheable
    let second = try await manager.data(from: url)   // fresh: from disk, no request
    try await manager.shutdown()
    return (first, second)
}

@Suite("The article's examples", .timeLimit(.minutes(1)))
struct ArticleExamplesTests {
    @Test func queueManyDownloadsFinishesAll() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let bodies = (0..<6).map { f.serve("/e\($0).bin", size: 50_000, seed: UInt64($0) + 1) }
        let state = f.directory + "/../state"
        let finished = try await queueManyDownloads((0..<6).map { f.server.url("/e\($0).bin") }, into: f.directory, stateDirectory: state)
        #expect(finished.count == 6 && finished.allSatisfy { $0.state == .completed })
        for (i, body) in bodies.enumerated() {
            #expect(sha256(file: f.path("e\(i).bin")) == sha256(body))
        }
        #expect(f.server.maxConcurrentResponses <= 2)
    }

    @Test func pauseAndResumeCompletes() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/p.bin", size: 400_000)
        f.server.setDefault("/p.bin", .throttle(bytesPerSecond: 2_000_000))
        let stats = try await pauseAndResume(f.server.url("/p.bin"), into: f.directory)
        #expect(stats.completed == 1 && stats.active == 0 && stats.waiting == 0)
        #expect(sha256(file: f.path("p.bin")) == sha256(body))
    }

    @Test func theSecondFetchComesFromDisk() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/c.json", size: 2_000) { $0.extraHeaders = [("Cache-Control", "max-age=60")] }
        let (first, second) = try await fetchThroughTheCache(f.server.url("/c.json"), cacheDirectory: f.directory + "/../cache")
        #expect(Array(first) == body && Array(second) == body)
        #expect(f.server.requests(to: "/c.json").count == 1)
    }
}
