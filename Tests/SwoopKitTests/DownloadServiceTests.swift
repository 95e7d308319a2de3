import Foundation
import Logging
import ServiceLifecycle
import SwoopTesting
import Testing

@testable import SwoopKit

/// `DownloadService`: the manager's life cycle in a swift-service-lifecycle `ServiceGroup`, as the
/// command line and a daemon run it.
@Suite("DownloadService: reconcile, run, drain and save, shut down")
struct DownloadServiceTests {
    static let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    @Test func reconcilesFirstRunsTheQueueAndSavesProgressOnGracefulShutdown() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let store = InMemoryDownloadStore()
        // Left `active` by a process that died: reconciling at start puts it back to waiting.
        var dead = f.record("/dead.bin")
        dead.state = .active
        try store.save(dead)
        f.serve("/s.bin", size: 1_000_000)
        f.server.setDefault("/s.bin", .stallAfter(bytes: 300_000))

        let manager = try DownloadManager(configuration: f.configuration, store: store)
        let events = ManagerEventLog(manager.events())
        let service = DownloadService(manager: manager)
        let group = ServiceGroup(configuration: .init(services: [service], logger: Self.logger))
        let running = Task { try await group.run() }

        let report = try await service.reconciled()
        #expect(report.recovered == [dead.id])
        #expect(await manager.isRunning)
        let id = try await manager.add(f.request("/s.bin"))
        #expect(await f.partFileReaches("s.bin", size: 300_000))

        await group.triggerGracefulShutdown()
        try await running.value
        let saved = try #require(try store.record(id: id))
        #expect(saved.state == .interrupted)
        #expect(saved.committedBytes == 300_000)
        #expect(await eventually { events.ended })
        #expect(events.terminal(id).map(\.caseName) == ["paused"])
        #expect(await eventually { f.server.openConnections == 0 })
        await #expect(throws: SwoopError.self) { try await manager.add(f.request("/s.bin")) }
    }

    @Test func aStoreThatCannotBeReadStopsTheServiceWithItsError() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let manager = try DownloadManager(configuration: f.configuration, store: UnreadableStore())
        let service = DownloadService(manager: manager)
        let running = Task { try await service.run() }
        await #expect { try await service.reconciled() } throws: { ($0 as? SwoopError)?.code == .store }
        await #expect(throws: SwoopError.self) { try await running.value }
    }
}

/// A store whose every read fails.
private struct UnreadableStore: DownloadStore {
    static let failure = SwoopError(.store, "cannot read the state database")
    func find(url: String, directory: String, requestedName: String) throws -> DownloadRecord? { throw Self.failure }
    func record(id: Download.ID) throws -> DownloadRecord? { throw Self.failure }
    func unfinished(directory: String, fileName: String) throws -> DownloadRecord? { throw Self.failure }
    func save(_ record: DownloadRecord) throws { throw Self.failure }
    func update(_ record: DownloadRecord, durable: Bool) throws { throw Self.failure }
    func update(settings: DownloadSettings, id: Download.ID) throws { throw Self.failure }
    func markActive(ids: [Download.ID], at date: Date) throws { throw Self.failure }
    func checkpoint(id: Download.ID, committedBytes: Int, syncedBytes: Int, bootID: String, bytesPerSecond: Double) throws {
        throw Self.failure
    }
    func all() throws -> [DownloadRecord] { throw Self.failure }
    func delete(id: Download.ID) throws { throw Self.failure }
}
