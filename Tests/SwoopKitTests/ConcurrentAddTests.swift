import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import SwoopKit

/// Two processes adding the same downloads at once (two `swoop get` started together on one
/// state directory): the one whose save finds the other's records reads again and reuses them.
@Suite("Adding while another process adds", .timeLimit(.minutes(1)))
struct ConcurrentAddTests {
    @Test func aBatchRefusedForAKeyAnotherProcessAddedIsReadAgainAndReusesItsRecord() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let requests = [try f.request("/a.bin"), try f.request("/b.bin")]
        let rival = DownloadRecord(requests[1], bootID: FileSystem.bootID, position: 0)
        let inner = InMemoryDownloadStore()
        let saves = NIOLockedValueBox(0)
        // At the first batch saved, "another process" adds `rival` first; the batch is then
        // refused as the SQLite store refuses a key taken meanwhile.
        let store = ObservedStore(inner: inner, savingBatch: { records in
            let first = saves.withLockedValue { count in
                count += 1
                return count == 1
            }
            guard first, records.contains(where: { $0.key == rival.key && $0.id != rival.id }) else { return }
            try inner.save(rival)
            throw SwoopError.keyTaken(SwoopError(.store, "UNIQUE constraint failed"))
        })
        let manager = try DownloadManager(configuration: f.configuration, store: store)
        let ids = try await manager.add(contentsOf: requests)
        #expect(ids.count == 2)
        #expect(ids[1] == rival.id)
        #expect(saves.withLockedValue { $0 } == 2)
        #expect(try store.all().count == 2)
        #expect(try store.record(id: ids[0])?.url == requests[0].url.absoluteString)
    }
}
