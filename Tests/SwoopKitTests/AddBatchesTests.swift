import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import SwoopKit

/// A long list is added in batches of ``DownloadManager/addBatch``: one read and one save each.
@Suite("Adding a long list in batches", .timeLimit(.minutes(1)))
struct AddBatchesTests {
    @Test func aLongListIsSavedInBatchesAndARepeatedURLGetsOneIdAcrossThem() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let batch = DownloadManager.addBatch
        var requests = try (0..<(2 * batch + 500)).map { try f.request("/f\($0).bin") }
        // Lines of the second and third batches that repeat lines of the first and second.
        requests[batch + 500] = requests[10]
        requests[2 * batch + 400] = requests[batch + 600]
        let saves = NIOLockedValueBox<[Int]>([])
        let store = ObservedStore(savingBatch: { records in saves.withLockedValue { $0.append(records.count) } })
        let manager = try DownloadManager(configuration: f.configuration, store: store)
        let ids = try await manager.add(contentsOf: requests)
        #expect(ids.count == requests.count)
        #expect(ids[batch + 500] == ids[10])
        #expect(ids[2 * batch + 400] == ids[batch + 600])
        #expect(Set(ids).count == requests.count - 2)
        #expect(saves.withLockedValue { $0 } == [batch, batch - 1, 499])
        #expect(try store.all().count == requests.count - 2)
        for index in [0, batch, 2 * batch + 499] {
            #expect(try store.record(id: ids[index])?.url == requests[index].url.absoluteString)
        }
        #expect(await manager.stats().waiting == requests.count - 2)
    }

    @Test func batchesSavedBeforeOneThatFailsStayQueuedAndAreFoundAgain() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let batch = DownloadManager.addBatch
        let requests = try (0..<(batch + 10)).map { try f.request("/g\($0).bin") }
        let saves = NIOLockedValueBox(0)
        let store = ObservedStore(savingBatch: { _ in
            let count = saves.withLockedValue { count in
                count += 1
                return count
            }
            if count == 2 { throw SwoopError(.store, "disk I/O error") }
        })
        let manager = try DownloadManager(configuration: f.configuration, store: store)
        await #expect(throws: SwoopError.self) { try await manager.add(contentsOf: requests) }
        let saved = try store.all()
        #expect(saved.count == batch)
        #expect(await manager.stats().waiting == batch)
        // The same list again: the first batch is found (same ids, still queued), the rest added.
        let ids = try await manager.add(contentsOf: requests)
        #expect(Set(ids.prefix(batch)) == Set(saved.map(\.id)))
        #expect(try store.all().count == batch + 10)
        #expect(await manager.stats().waiting == batch + 10)
    }
}
