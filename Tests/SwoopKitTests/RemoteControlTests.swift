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

    /// A download held by a manager that does not watch for controls (a direct download with no
    /// `run()`, as an older swoop would be), stalled after 100,000 bytes.
    static func unwatchedHolder(
        _ f: ManagerFixture
    ) async throws -> (store: InMemoryDownloadStore, holder: DownloadManager, direct: Task<DownloadOutcome, any Error>, id: Download.ID) {
        let store = InMemoryDownloadStore()
        // Every answer stalls: on a loaded machine the test can outlast the idle timeout, and a retry
        // must not finish the download it expects to interrupt.
        f.serveStalling("/s.bin", size: 1_000_000, after: 100_000, every: true)
        let holder = try DownloadManager(configuration: f.configuration, store: store)
        let request = try f.request("/s.bin")
        let direct = Task { try await holder.download(request) }
        #expect(await f.partFileReaches("s.bin", size: 100_000))
        return (store, holder, direct, try #require(try store.all().first?.id))
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
        // A completed download has no rate to limit.
        let done = await #expect(throws: SwoopError.self) { try await other.manager.setRateLimit(id, bytesPerSecond: 1000) }
        #expect(done?.message == "the download is completed: there is nothing to change")
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
        let (store, holder, direct, id) = try await Self.unwatchedHolder(f)

        var impatient = f.configuration
        impatient.durability.controlTimeout = .milliseconds(300)
        let other = try f.start(store: store, configuration: impatient)
        let error = await #expect(throws: SwoopError.self) { try await other.manager.pause(id) }
        #expect(error?.code == .inUse)
        #expect(error?.message.hasSuffix(", which did not answer within 0.3s") == true)
        #expect(try store.controls().isEmpty)
        // Not paused: active (a small file still waiting for its claim is marked so after a moment).
        #expect(await eventually { (try? store.record(id: id))??.state == .active })
        // A limit nobody answered changes nothing, not even the stored settings.
        await #expect(throws: SwoopError.self) { try await other.manager.setRateLimit(id, bytesPerSecond: 1000) }
        #expect(try store.record(id: id)?.settings.bytesPerSecond == nil)
        #expect(try store.controls().isEmpty)

        direct.cancel()
        _ = await direct.result
        #expect(try store.record(id: id)?.state == .interrupted)
        try await holder.shutdown()
        await other.stop()
    }

    /// Two callers at once (a pause and a new limit): each request is its own and each is answered.
    @Test func twoCallersAtOnceAreBothAnswered() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let (store, owner, other, id) = try await Self.twoManagers(f)
        async let limited: Void = other.manager.setRateLimit(id, bytesPerSecond: 7000)
        async let paused: Void = other.manager.pause(id)
        _ = try await (limited, paused)
        #expect(try store.record(id: id)?.state == .paused)
        #expect(try store.record(id: id)?.settings.bytesPerSecond == 7000)
        #expect(try store.controls().isEmpty)
        await owner.stop()
        await other.stop()
    }

    /// A control posted before a run went for the lock was meant for an earlier run: the new run
    /// leaves it alone and finishes.
    @Test func aControlPostedBeforeTheRunIsLeftAlone() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let store = InMemoryDownloadStore()
        let body = f.serve("/old.bin", size: 300_000)
        let owner = try f.start(store: store)
        let record = f.record("/old.bin")
        try store.save(record)
        let stale = PostedControl(id: record.id, control: .remove(deletingFile: true), postedAt: Date(timeIntervalSinceNow: -60))
        try store.post(stale)
        f.server.setDefault("/old.bin", .throttle(bytesPerSecond: 600_000))
        _ = try await owner.manager.resumeAll()
        #expect(await owner.waitForTerminal([record.id]))
        #expect(try store.record(id: record.id)?.state == .completed)
        #expect(sha256Hex(file: f.path("old.bin")) == sha256Hex(body))
        #expect(try store.controls() == [stale])
        await owner.stop()
    }

    /// The holder's answer that it could not carry the request out is the caller's error.
    @Test func aFailedAnswerIsTheCallersError() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        // A holder that does not watch; the test answers in its place.
        let (store, holder, direct, id) = try await Self.unwatchedHolder(f)
        let other = try f.start(store: store)
        let answering = Task {
            while true {
                if let posted = try store.controls().first {
                    try store.answer(posted.token, .failed(.invalidArgument, "a completed download cannot be paused"))
                    return
                }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        let error = await #expect(throws: SwoopError.self) { try await other.manager.pause(id) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.hasSuffix("a completed download cannot be paused") == true)
        try await answering.value
        #expect(try store.controls().isEmpty)
        direct.cancel()
        _ = await direct.result
        try await holder.shutdown()
        await other.stop()
    }
}
