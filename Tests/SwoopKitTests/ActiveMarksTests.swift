import Foundation
import NIOConcurrencyHelpers
import SwoopTesting
import Testing

@testable import SwoopKit

/// A download shows `active` in its store while its first request waits for an answer; a quick one
/// records `active` with its first save and is never marked separately.
@Suite("Active marks", .timeLimit(.minutes(1)))
struct ActiveMarksTests {
    @Test func aDownloadWaitingForItsFirstAnswerIsMarkedActive() async throws {
        var f = try await Fixture.make()
        defer { f.stop() }
        f.configuration.timeouts.idle = .seconds(30)
        f.configuration.durability.activeMarkDelay = .milliseconds(100)
        let silent = try TestPort(listening: true)
        let marks = NIOLockedValueBox(0)
        let store = ObservedStore(onMarkActive: { ids in marks.withLockedValue { $0 += ids.count } })
        let request = try DownloadRequest(url: silent.url("/slow.bin"), directory: f.directory)
        let fixture = f
        let download = Task { await fixture.download(request, store: store) }
        // Bounded: the mark is due after `activeMarkDelay` (0.1 s).
        var state: Download.State?
        for _ in 0..<100 {
            state = try store.all().first?.state
            if state == .active { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(state == .active)
        #expect(marks.withLockedValue { $0 } == 1)
        download.cancel()
        let (result, _) = await download.value
        #expect(throws: SwoopError.self) { try result.get() }
        #expect(try store.all().first?.state == .interrupted)
        withExtendedLifetime(silent) {}
    }

    @Test func aDownloadThatSavesItsProgressIsNoLongerPendingAndNeverMarked() async throws {
        var f = try await Fixture.make()
        defer { f.stop() }
        // Far longer than the download takes, even on a loaded machine: its own save comes first.
        f.configuration.durability.activeMarkDelay = .seconds(60)
        let body = f.serve("/quick.bin", size: 10_000)
        let marks = NIOLockedValueBox(0)
        let store = ObservedStore(onMarkActive: { ids in marks.withLockedValue { $0 += ids.count } })
        let manager = try DownloadManager(configuration: f.configuration, store: store)
        let outcome = try await manager.download(try f.request("/quick.bin"))
        #expect(sha256(file: f.path("quick.bin")) == sha256(body))
        #expect(!manager.activeMarks.isPending(outcome.download.id))
        #expect(marks.withLockedValue { $0 } == 0)
        #expect(try store.all().first?.state == .completed)
        try await manager.shutdown()
    }

    /// The marks due at one tick are one write (one transaction in SQLite), not one each.
    @Test func marksDueTogetherAreWrittenTogether() async throws {
        let batches = NIOLockedValueBox<[[Download.ID]]>([])
        let store = ObservedStore(onMarkActive: { ids in batches.withLockedValue { $0.append(ids) } })
        let records = (0..<3).map { DownloadRecord(id: .init("mark-\($0)"), url: "http://127.0.0.1/\($0)", directory: "/tmp", requestedName: "", bootID: "b") }
        try store.save(contentsOf: records)
        let marks = ActiveMarks(store: store)
        for record in records { marks.add(record.id, after: .zero) }
        // Bounded: due at once, written at the next tick (50 ms).
        for _ in 0..<100 where batches.withLockedValue({ $0.isEmpty }) {
            try await Task.sleep(for: .milliseconds(20))
        }
        let written = batches.withLockedValue { $0 }
        #expect(written.count == 1)
        #expect(Set(written.first ?? []) == Set(records.map(\.id)))
        #expect(try store.all().allSatisfy { $0.state == .active })
    }
}
