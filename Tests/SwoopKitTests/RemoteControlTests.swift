import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

/// Two managers over one store and one lock directory, as two swoop processes over one state
/// directory: `pause`, `remove` and `setRateLimit` called on the one that does not run a download
/// reach the one that does, through the store's controls.
@Suite("Control of a download another manager runs")
struct RemoteControlTests {
    /// Two running managers over one store: `owner` runs a download stalled after 100,000 bytes.
    static func twoManagers(_ f: ManagerFixture) async throws -> (store: InMemoryDownloadStore, owner: ManagerRun, other: ManagerRun, id: Download.ID) {
        let store = InMemoryDownloadStore()
        let owner = try f.start(store: store)
        let other = try f.start(store: store)
        f.serveStalling("/s.bin", size: 1_000_000, after: 100_000)
        let id = try await owner.manager.add(try f.request("/s.bin"))
        #expect(await f.partFileReaches("s.bin", size: 100_000))
        return (store, owner, other, id)
    }

    @Test func pauseAndLimitAreCarriedOutByTheManagerThatRunsIt() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let (store, owner, other, id) = try await Self.twoManagers(f)

        try await other.manager.setRateLimit(id, bytesPerSecond: 5000)
        #expect(owner.manager.rateLimits.runningRate(id) == 5000)
        #expect(try store.record(id: id)?.settings.bytesPerSecond == 5000)

        try await other.manager.pause(id)
        // Done when `pause` returns: the owner stopped it, saved it paused and said so.
        #expect(try store.record(id: id)?.state == .paused)
        #expect(try store.record(id: id)?.committedBytes == 100_000)
        #expect(await owner.events.wait { _ in owner.events.terminal(id).map(\.download.state) == [.paused] })
        #expect(try store.controls().isEmpty)
        // Stopped, it is anyone's to resume: with the stored limit lifted, the other manager finishes it.
        try await other.manager.setRateLimit(id, bytesPerSecond: nil)
        #expect(try store.record(id: id)?.settings.bytesPerSecond == 0)
        try await other.manager.resume(id)
        #expect(await other.waitForTerminal([id]))
        #expect(try store.record(id: id)?.state == .completed)
        await owner.stop()
        await other.stop()
    }

    @Test func removeIsCarriedOutByTheManagerThatRunsIt() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let (store, owner, other, id) = try await Self.twoManagers(f)

        try await other.manager.remove(id, deletingFile: true)
        #expect(try store.record(id: id) == nil)
        #expect(!FileManager.default.fileExists(atPath: f.path("s.bin.swoop")))
        #expect(await owner.events.wait { _ in owner.events.terminal(id).map(\.download.state) == [.removed] })
        await owner.stop()
        await other.stop()
    }

    /// A holder that does not watch (here: a direct download with no `run()`, as an older swoop
    /// would be) leaves the caller with `inUse` after the timeout, and no control behind.
    @Test func aHolderThatDoesNotAnswerIsInUseAfterTheTimeoutAndLeavesNoControl() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let store = InMemoryDownloadStore()
        f.serveStalling("/s.bin", size: 1_000_000, after: 100_000)
        let holder = try DownloadManager(configuration: f.configuration, store: store)
        let request = try f.request("/s.bin")
        let direct = Task { try await holder.download(request) }
        #expect(await f.partFileReaches("s.bin", size: 100_000))
        let id = try #require(try store.all().first?.id)

        var impatient = f.configuration
        impatient.durability.controlTimeout = .milliseconds(300)
        let other = try f.start(store: store, configuration: impatient)
        let error = await #expect(throws: SwoopError.self) { try await other.manager.pause(id) }
        #expect(error?.code == .inUse)
        #expect(error?.message.hasSuffix("and it did not answer within 0.3s (is it an older swoop?)") == true)
        #expect(try store.controls().isEmpty)
        #expect(try store.record(id: id)?.state == .active)

        direct.cancel()
        _ = await direct.result
        #expect(try store.record(id: id)?.state == .interrupted)
        try await holder.shutdown()
        await other.stop()
    }
}
