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
    @Test func aSmallFreshDownloadFlushesTheStoreOnceAtCompletion() async throws {
        var f = try await Fixture.make()
        defer { f.stop() }
        // No checkpoint by time, however slow the machine: only the bytes count here.
        f.configuration.durability.checkpointInterval = .seconds(60)
        let body = f.serve("/small.bin", size: 100_000)
        let (store, log) = Self.loggingStore()
        _ = try await f.download(try f.request("/small.bin"), store: store).result.get()
        #expect(sha256(file: f.path("small.bin")) == sha256(body))
        let updates = log.withLockedValue { $0 }
        #expect(updates.map(\.durable) == [false, true])
        #expect(updates.first?.state == .active && updates.first?.fileName == "small.bin" && updates.first?.etag == "\"v1\"")
        #expect(updates.last?.state == .completed)
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
