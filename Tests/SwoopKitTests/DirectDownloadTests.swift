import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

/// `DownloadManager.download(_:)` runs outside the queue, with one id throughout: the id its
/// events carry is the id of its record, and `pause` takes it.
@Suite("Direct downloads: one identity")
struct DirectDownloadTests {
    @Test func aDirectDownloadIsPausedByTheIdItsEventsCarry() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let body = f.serveStalling("/d.bin", size: 2_000_000, after: 1_200_000)
        let store = InMemoryDownloadStore()
        let run = try f.start(store: store)
        let download = Task { try await run.manager.download(f.request("/d.bin")) }
        #expect(await run.events.wait { $0.contains { $0.caseName == "started" } })
        let id = try #require(run.events.all.first { $0.caseName == "started" }?.download.id)
        #expect(try store.record(id: id) != nil)
        #expect(await f.partFileReaches("d.bin", size: 1_200_000))

        try await run.manager.pause(id)
        await #expect { try await download.value } throws: { ($0 as? SwoopError)?.code == .cancelled }
        #expect(try store.record(id: id)?.state == .paused)
        #expect(try store.record(id: id)?.committedBytes == 1_200_000)
        #expect(await run.events.wait { _ in !run.events.terminal(id).isEmpty })
        #expect(run.events.terminal(id).map(\.caseName) == ["paused"])
        #expect(Set(run.events.all.map(\.download.id)) == [id])

        // The same request again continues the same record, under the same id.
        let outcome = try await run.manager.download(f.request("/d.bin"))
        #expect(outcome.download.id == id)
        #expect(sha256(file: f.path("d.bin")) == sha256(body))
        #expect(f.server.requests(to: "/d.bin").last?.header("Range") == "bytes=1200000-")
        #expect(run.events.terminal(id).map(\.caseName) == ["paused", "completed"])
        await run.stop()
    }

    @Test func aDirectDownloadOfACompletedFileSaysSoOnceWithItsStoredId() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        f.serve("/c.bin", size: 1000)
        let run = try f.start()
        let first = try await run.manager.download(f.request("/c.bin"))
        let again = try await run.manager.download(f.request("/c.bin"))
        guard case .alreadyComplete(let download) = again else {
            Issue.record("expected alreadyComplete, got \(again)")
            return
        }
        #expect(download.id == first.download.id)
        #expect(await run.events.wait { _ in run.events.terminal(first.download.id).count == 2 })
        #expect(run.events.terminal(first.download.id).map(\.caseName) == ["completed", "alreadyComplete"])
        #expect(f.server.requests(to: "/c.bin").count == 1)
        await run.stop()
    }

    @Test func theSameDownloadRunsOnceWhetherAddedOrDownloadedDirectly() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let body = f.serveStalling("/once.bin", size: 1_000_000, after: 300_000)
        let store = InMemoryDownloadStore()
        let run = try f.start(store: store)
        let direct = Task { try await run.manager.download(f.request("/once.bin")) }
        #expect(await f.partFileReaches("once.bin", size: 300_000))
        let id = try #require(try store.all().first?.id)

        // Adding it while it runs directly neither queues it again nor touches its record.
        #expect(try await run.manager.add(f.request("/once.bin")) == id)
        #expect(await run.manager.stats().waiting == 0)
        await #expect { try await run.manager.download(f.request("/once.bin")) } throws: { ($0 as? SwoopError)?.code == .inUse }

        try await run.manager.pause(id)
        await #expect { try await direct.value } throws: { ($0 as? SwoopError)?.code == .cancelled }
        #expect(await run.events.wait { _ in !run.events.terminal(id).isEmpty })
        #expect(run.events.terminal(id).map(\.caseName) == ["paused"])
        #expect(f.server.requests(to: "/once.bin").count == 1)

        // Queued now, it is not downloaded directly beside the queue's run.
        try await run.manager.resume(id)
        #expect(await run.events.wait { _ in run.events.terminal(id).count == 2 })
        #expect(run.events.terminal(id).map(\.caseName) == ["paused", "completed"])
        #expect(sha256(file: f.path("once.bin")) == sha256(body))
        await run.stop()
    }
}
