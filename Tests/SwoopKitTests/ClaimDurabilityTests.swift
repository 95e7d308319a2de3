import Foundation
import NIOConcurrencyHelpers
import SwoopTesting
import Testing

@testable import SwoopKit

/// When a transfer's saves flush the store: a fresh download names its part file without a flush
/// (a rollback then names nothing), flushes that claim at its first checkpoint, and records its
/// completion durably; a download that already named a representation saves durably before writing.
@Suite("Which saves are durable", .timeLimit(.minutes(1)))
struct ClaimDurabilityTests {
    /// A small file's claim waits for its completion (`Transfer.claimPending`): one durable write.
    @Test func aSmallFreshDownloadWritesTheStoreOnceAtCompletion() async throws {
        var f = try await Fixture.make()
        defer { f.stop() }
        // No checkpoint by time, however slow the machine: only the bytes count here.
        f.configuration.durability.checkpointInterval = .seconds(60)
        let body = f.serve("/small.bin", size: 100_000)
        let (store, log) = Self.loggingStore()
        _ = try await f.download(try f.request("/small.bin"), store: store).result.get()
        #expect(sha256(file: f.path("small.bin")) == sha256(body))
        let updates = log.withLockedValue { $0 }
        #expect(updates.map(\.durable) == [true])
        #expect(updates.first?.state == .completed && updates.first?.fileName == "small.bin" && updates.first?.etag == "\"v1\"")
    }

    @Test func aLargerFreshDownloadFlushesItsClaimAtTheFirstCheckpoint() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/large.bin", size: 3 << 20)
        let (store, log) = Self.loggingStore()
        _ = try await f.download(try f.request("/large.bin"), store: store).result.get()
        #expect(sha256(file: f.path("large.bin")) == sha256(body))
        let updates = log.withLockedValue { $0 }
        #expect(updates.count == 3)
        #expect(updates.map(\.durable) == [false, true, true])
        // The second names the file and its validators with progress: a power loss after it can
        // roll progress back, not the claim.
        let claim = try #require(updates.dropFirst().first)
        #expect(claim.state == .active && claim.fileName == "large.bin" && claim.etag == "\"v1\"")
        #expect(claim.committedBytes > 0 && claim.committedBytes < body.count)
        #expect(updates.last?.state == .completed)
    }

    @Test func aResumedDownloadSavesDurablyBeforeWriting() async throws {
        var f = try await Fixture.make()
        defer { f.stop() }
        f.configuration.durability.checkpointInterval = .seconds(60)
        let body = f.serve("/r.bin", size: 200_000)
        let inner = try f.interrupted("/r.bin", total: body.count, committed: 50_000, synced: 50_000, partFile: Array(body[0..<50_000]))
        let (store, log) = Self.loggingStore(inner: inner)
        _ = try await f.download(try f.request("/r.bin"), store: store).result.get()
        #expect(sha256(file: f.path("r.bin")) == sha256(body))
        #expect(f.server.requests(to: "/r.bin").first?.header("Range") == "bytes=50000-")
        // Every save before the bytes is durable: the record already named a representation.
        #expect(log.withLockedValue { $0 }.allSatisfy { $0.durable })
        #expect(log.withLockedValue { $0 }.last?.state == .completed)
    }

    @Test func aSplitDownloadAsksForItsSegmentsWhileItsValidatorsAreSavedAndWritesOnlyAfter() async throws {
        let f = try await SegmentedDownloadTests.fixture(connections: 4, minSplit: 256 << 10)
        defer { f.stop() }
        let body = f.serve("/split.bin", size: 2 << 20)
        let partPath = f.path("split.bin.swoop")
        // Holds the durable save of the validators (on its disk thread) until the segments' requests
        // have come, at most 10 s, and notes what the part file held by then.
        let seen = NIOLockedValueBox<(requests: Int, partBytes: Int)?>(nil)
        let store = ObservedStore { record, durable in
            guard durable, record.state == .active, record.etag != nil, seen.withLockedValue({ $0 == nil }) else { return }
            let deadline = ContinuousClock.now + .seconds(10)
            while f.server.requests(to: "/split.bin").count < 4, ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.005)
            }
            let size = (try? FileManager.default.attributesOfItem(atPath: partPath)[.size] as? Int) ?? -1
            seen.withLockedValue { $0 = (f.server.requests(to: "/split.bin").count, size) }
        }
        _ = try await f.download(try f.request("/split.bin"), store: store).result.get()
        #expect(sha256(file: f.path("split.bin")) == sha256(body))
        let held = try #require(seen.withLockedValue { $0 })
        // The probe and the three other segments were asked while the save was under way...
        #expect(held.requests >= 4)
        // ...and not one byte reached the file before the save was done.
        #expect(held.partBytes == 0)
    }

    @Test func aSplitDownloadWhoseValidatorsCannotBeSavedFailsWithThatErrorHavingWrittenNothing() async throws {
        let f = try await SegmentedDownloadTests.fixture(connections: 4, minSplit: 256 << 10)
        defer { f.stop() }
        _ = f.serve("/split.bin", size: 2 << 20)
        let store = ObservedStore(failing: { record, durable in
            durable && record.state == .active && record.etag != nil ? SwoopError(.store, "the disk of the state database is full") : nil
        })
        let outcome = await f.download(try f.request("/split.bin"), store: store).result
        guard case .failure(let error) = outcome else {
            Issue.record("the download finished without its validators saved")
            return
        }
        #expect(error.message.contains("the disk of the state database is full"), "\(error.message)")
        #expect(!FileManager.default.fileExists(atPath: f.path("split.bin")))
        let size = (try? FileManager.default.attributesOfItem(atPath: f.path("split.bin.swoop"))[.size] as? Int) ?? 0
        #expect(size == 0)
    }

    struct Update: Sendable {
        var state: Download.State
        var fileName: String?
        var etag: String?
        var committedBytes: Int
        var durable: Bool
    }

    /// A store that logs every `update` with its durability.
    static func loggingStore(
        inner: InMemoryDownloadStore = InMemoryDownloadStore()
    ) -> (ObservedStore, NIOLockedValueBox<[Update]>) {
        let log = NIOLockedValueBox<[Update]>([])
        let store = ObservedStore(inner: inner) { record, durable in
            let update = Update(
                state: record.state, fileName: record.fileName, etag: record.etag, committedBytes: record.committedBytes,
                durable: durable
            )
            log.withLockedValue { $0.append(update) }
        }
        return (store, log)
    }
}
