import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import SwoopKit

/// Two processes adding the same downloads at once (two `swoop get` started together on one
/// state directory): the one whose save finds the other's records reads again and reuses them.
@Suite("Adding while another process adds", .timeLimit(.minutes(1)))
struct ConcurrentAddTests {
    /// A store that, at the first batch saved, lets "another process" add `rival` first, then
    /// refuses the batch as the SQLite store does when a key is taken.
    final class RacingStore: DownloadStore {
        let inner = InMemoryDownloadStore()
        let rival: DownloadRecord
        let saves = NIOLockedValueBox(0)

        init(rival: DownloadRecord) { self.rival = rival }

        func save(contentsOf records: [DownloadRecord]) throws {
            let first = saves.withLockedValue { count in
                count += 1
                return count == 1
            }
            if first, records.contains(where: { $0.key == rival.key && $0.id != rival.id }) {
                try inner.save(rival)
                throw SwoopError.keyTaken(SwoopError(.store, "UNIQUE constraint failed"))
            }
            try inner.save(contentsOf: records)
        }

        func update(_ record: DownloadRecord, durable: Bool) throws { try inner.update(record, durable: durable) }
        func update(settings: DownloadSettings, id: Download.ID) throws { try inner.update(settings: settings, id: id) }
        func markActive(id: Download.ID, at date: Date) throws { try inner.markActive(id: id, at: date) }
        func save(_ record: DownloadRecord) throws { try inner.save(record) }
        func find(url: String, directory: String, requestedName: String) throws -> DownloadRecord? {
            try inner.find(url: url, directory: directory, requestedName: requestedName)
        }
        func record(id: Download.ID) throws -> DownloadRecord? { try inner.record(id: id) }
        func unfinished(directory: String, fileName: String) throws -> DownloadRecord? {
            try inner.unfinished(directory: directory, fileName: fileName)
        }
        func checkpoint(id: Download.ID, committedBytes: Int, syncedBytes: Int, bootID: String, bytesPerSecond: Double) throws {
            try inner.checkpoint(id: id, committedBytes: committedBytes, syncedBytes: syncedBytes, bootID: bootID, bytesPerSecond: bytesPerSecond)
        }
        func checkpoint(id: Download.ID, segments: [Segment], bootID: String, bytesPerSecond: Double) throws {
            try inner.checkpoint(id: id, segments: segments, bootID: bootID, bytesPerSecond: bytesPerSecond)
        }
        func all() throws -> [DownloadRecord] { try inner.all() }
        func delete(id: Download.ID) throws { try inner.delete(id: id) }
    }

    @Test func aBatchRefusedForAKeyAnotherProcessAddedIsReadAgainAndReusesItsRecord() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let requests = [try f.request("/a.bin"), try f.request("/b.bin")]
        let rival = DownloadRecord(requests[1], bootID: FileSystem.bootID, position: 0)
        let store = RacingStore(rival: rival)
        let manager = try DownloadManager(configuration: f.configuration, store: store)
        let ids = try await manager.add(contentsOf: requests)
        #expect(ids.count == 2)
        #expect(ids[1] == rival.id)
        #expect(store.saves.withLockedValue { $0 } == 2)
        #expect(try store.all().count == 2)
        #expect(try store.record(id: ids[0])?.url == requests[0].url.absoluteString)
    }
}
