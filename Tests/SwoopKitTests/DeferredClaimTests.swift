import Foundation
import NIOConcurrencyHelpers
import NIOCore
import SwoopTesting
import Testing

@testable import SwoopKit

/// A fresh small file's claim waits for its finish (`Transfer.claimPending`): its part file is
/// tagged with the download's id meanwhile, the name reaches the store with the completion, a rerun
/// after a crash takes its tagged part file back, and a claim refused at the finish takes another name.
@Suite("Claims that wait for the finish", .timeLimit(.minutes(1)))
struct DeferredClaimTests {
    /// The store sees the name only with the completed record, in the finishing group, and the
    /// final file carries no tag.
    @Test func aSmallFilesNameReachesTheStoreWithItsCompletion() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/small.bin", size: 300_000)
        let written = NIOLockedValueBox<[(Download.State, String?)]>([])
        let grouped = NIOLockedValueBox<[Download.State]>([])
        let store = ObservedStore(
            onUpdate: { record, _ in written.withLockedValue { $0.append((record.state, record.fileName)) } },
            onGroup: { records in grouped.withLockedValue { $0 += records.map(\.state) } }
        )
        let (result, _) = await f.download(try f.request("/small.bin"), store: store)
        #expect(try result.get().download.destination == f.path("small.bin"))
        #expect(sha256(file: f.path("small.bin")) == sha256(body))
        #expect(f.files() == ["small.bin"])
        #expect(grouped.withLockedValue { $0 } == [.completed])
        let named = written.withLockedValue { $0 }.filter { $0.1 != nil }
        #expect(named.map(\.0) == [.completed], "every write naming the file: \(named)")
        let final = try #require(try PartFile.open(f.path("small.bin"), exclusive: false))
        #expect(final.taggedDownload == nil)
    }

    /// A small file whose checksum does not match was never named in the store: it stays unnamed
    /// (no claim written only to be dropped), its tagged part file goes, and the failure is recorded.
    @Test func aChecksumMismatchClaimsNoName() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        f.serve("/bad.bin", size: 300_000)
        let written = NIOLockedValueBox<[(Download.State, String?, Bool)]>([])
        let store = ObservedStore(onUpdate: { record, durable in written.withLockedValue { $0.append((record.state, record.fileName, durable)) } })
        var request = try f.request("/bad.bin")
        request.checksum = try Checksum(parsing: "sha256=\(String(repeating: "0", count: 64))")
        let (result, _) = await f.download(request, store: store)
        #expect((try? result.get()) == nil)
        let named = written.withLockedValue { $0 }.filter { $0.1 != nil }
        #expect(named.isEmpty, "writes naming the file: \(named)")
        #expect(written.withLockedValue { $0 }.last.map { ($0.0, $0.2) } ?? (.waiting, false) == (.failed, true))
        #expect(f.files().isEmpty)
    }

    /// An unfinished download whose part file another download made first, unclaimed (tagged and
    /// locked: a fresh small file of the same name in the same list), waits for that one to let
    /// it go instead of failing "in use", and then finishes byte-exact from zero.
    @Test func anUnfinishedDownloadWaitsForAnUnclaimedWriterOfItsFile() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/w.bin", size: 120_000)
        let store = InMemoryDownloadStore()
        let request = try f.request("/w.bin")
        var record = DownloadRecord(url: request.url.absoluteString, directory: f.directory, requestedName: "", bootID: "b")
        (record.fileName, record.state) = ("w.bin", .interrupted)
        try store.save(record)
        let part = f.path("w.bin.swoop")
        let writer = try #require(try PartFile.open(part, exclusive: true))
        #expect(writer.tag("0123456789abcdef"))
        try writer.write(ByteBuffer(repeating: 0x5A, count: 1000), at: 0)
        let release = Task {
            try await Task.sleep(for: .milliseconds(300))
            // Refused at its finish, the other download removes its file and lets it go.
            unlink(part)
            writer.unlock()
        }
        let (result, _) = await f.download(request, store: store)
        try await release.value
        #expect(try result.get().download.destination == f.path("w.bin"))
        #expect(sha256(file: f.path("w.bin")) == sha256(body))
        #expect(f.files() == ["w.bin"])
    }

    /// A pause while it waits for such a writer ends the run paused, as a pause during a transfer
    /// does: not failed with a cancellation.
    @Test func aPauseWhileWaitingForAnUnclaimedWriterPauses() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        f.serve("/p.bin", size: 120_000)
        let store = InMemoryDownloadStore()
        var record = f.record("/p.bin")
        (record.fileName, record.state) = ("p.bin", .interrupted)
        try store.save(record)
        let writer = try #require(try PartFile.open(f.path("p.bin.swoop"), exclusive: true))
        #expect(writer.tag("0123456789abcdef"))
        defer { writer.unlock() }
        let run = try f.start(store: store)
        let id = try await run.manager.add(try f.request("/p.bin"))
        #expect(id == record.id)
        try await Task.sleep(for: .milliseconds(300))
        try await run.manager.pause(id)
        #expect(await run.waitForTerminal([id]))
        guard case .paused? = run.events.terminal(id).first else {
            Issue.record("expected a pause, got \(run.events.terminal(id))")
            return
        }
        #expect(try store.record(id: id)?.state == .paused)
        await run.stop()
    }

    /// A file over the limit claims its name before its first byte, as before.
    @Test func aLargerFileClaimsBeforeItsFirstByte() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/large.bin", size: Transfer.deferredClaimLimit + 1)
        let written = NIOLockedValueBox<[(Download.State, String?)]>([])
        let store = ObservedStore(onUpdate: { record, _ in written.withLockedValue { $0.append((record.state, record.fileName)) } })
        let (result, _) = await f.download(try f.request("/large.bin"), store: store)
        #expect(sha256(file: try result.get().download.destination ?? "") == sha256(body))
        let named = written.withLockedValue { $0 }.filter { $0.1 != nil }
        #expect(named.first?.0 == .active, "the first write naming the file: \(named)")
    }

    /// What a process killed before the claim leaves: a record with no name and a part file with
    /// bytes and this download's tag. The rerun takes the file back (emptied: no record vouches for
    /// its bytes) and keeps the name. A tagged file of another download is left alone.
    @Test func aRerunTakesBackItsTaggedPartFileAndLeavesAnothersAlone() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/t.bin", size: 200_000)
        let store = InMemoryDownloadStore()
        let request = try f.request("/t.bin")
        var record = DownloadRecord(url: request.url.absoluteString, directory: f.directory, requestedName: "", bootID: "b")
        record.state = .active
        try store.save(record)
        try Self.leaveTaggedPartFile(f.path("t.bin.swoop"), bytes: 70_000, tag: record.id.rawValue)
        let (result, _) = await f.download(request, store: store)
        #expect(try result.get().download.destination == f.path("t.bin"))
        #expect(sha256(file: f.path("t.bin")) == sha256(body))
        #expect(f.files() == ["t.bin"])

        // Another download killed before its claim, whose record is still there: it may come back
        // for its file, which stays.
        let other = f.serve("/u.bin", size: 200_000, seed: 2)
        var killed = DownloadRecord(url: f.server.url("/elsewhere/u.bin"), directory: f.directory, requestedName: "", bootID: "b")
        killed.state = .active
        try store.save(killed)
        try Self.leaveTaggedPartFile(f.path("u.bin.swoop"), bytes: 1000, tag: killed.id.rawValue)
        let (second, _) = await f.download(try f.request("/u.bin"), store: store)
        #expect(try second.get().download.destination == f.path("u.1.bin"))
        #expect(sha256(file: f.path("u.1.bin")) == sha256(other))
        #expect(fileSize(f.path("u.bin.swoop")) == 1000)

        // Litter: tagged for a download that is gone (removed since). Taken, emptied, untagged.
        let third = f.serve("/v.bin", size: 200_000, seed: 3)
        try Self.leaveTaggedPartFile(f.path("v.bin.swoop"), bytes: 1000, tag: Download.ID.make().rawValue)
        let (taken, _) = await f.download(try f.request("/v.bin"), store: store)
        #expect(try taken.get().download.destination == f.path("v.bin"))
        #expect(sha256(file: f.path("v.bin")) == sha256(third))
        #expect(!FileSystem.exists(f.path("v.bin.swoop")))
    }

    /// A split download whose part file went missing finds another download's unclaimed bytes
    /// under its name, and its store fails as it starts over: the tag stays on those bytes (it is
    /// what says none of them is this download's), so the next run does not trust its segments
    /// either. Taking the tag off first left the bytes untagged beside the segments that vouched
    /// for them: a splice.
    @Test func anothersBytesKeepTheirTagUntilTheyAreCut() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/s.bin", size: 400_000)
        let inner = try f.interrupted("/s.bin", total: body.count, committed: 0, synced: 0, partFile: [])
        let id = try #require(try inner.all().first?.id)
        var record = try #require(try inner.record(id: id))
        record.segments = [Segment(start: 0, end: 200_000, written: 150_000, synced: 150_000), Segment(start: 200_000, end: 400_000, written: 100_000, synced: 100_000)]
        record.committedBytes = 250_000
        record.syncedBytes = 250_000
        try inner.save(record)
        let stranger = Download.ID.make().rawValue
        try Self.leaveTaggedPartFile(f.path("s.bin.swoop"), bytes: 400_000, tag: stranger)
        let broken = ObservedStore(inner: inner, failing: { _, durable in durable ? SwoopError(.store, "disk full") : nil })
        let (failed, _) = await f.download(try f.request("/s.bin"), store: broken)
        #expect((try? failed.get()) == nil)
        let left = try #require(try PartFile.open(f.path("s.bin.swoop"), exclusive: false))
        #expect(left.taggedDownload == stranger)
        left.unlock()

        let (result, _) = await f.download(try f.request("/s.bin"), store: inner)
        #expect(try result.get().download.destination == f.path("s.bin"))
        #expect(sha256(file: f.path("s.bin")) == sha256(body))
        #expect(f.files() == ["s.bin"])
    }

    /// A small file's claim made by its first checkpoint (due at once here) takes the tag off once it
    /// is durable: from then on the store names the file, as for any download, and the tag says
    /// nothing more (the completed record is written with the file untagged).
    @Test func aClaimMadeAtACheckpointTakesTheTagOff() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/c.bin", size: 300_000)
        f.server.enqueue("/c.bin", .cutAfter(bytes: 100_000))
        var configuration = f.configuration
        configuration.durability.checkpointInterval = .zero
        // Each write naming the file: its state, durability, and whether the part file was tagged.
        let writes = NIOLockedValueBox<[(Download.State, Bool, Bool)]>([])
        let store = ObservedStore(onUpdate: { record, durable in
            guard let part = record.partPath else { return }
            writes.withLockedValue { $0.append((record.state, durable, Self.isTagged(part))) }
        })
        let (result, _) = await f.download(try f.request("/c.bin"), store: store, configuration: configuration)
        #expect(sha256(file: try result.get().download.destination ?? "") == sha256(body))
        #expect(f.server.requests(to: "/c.bin").count == 2)
        #expect(f.server.requests(to: "/c.bin").last?.header("Range")?.hasPrefix("bytes=") == true)
        let seen = writes.withLockedValue { $0 }
        // The claim (tagged as it is written), then, once durable, no tag.
        #expect(seen.first.map { $0.0 == .active && $0.2 } == true, "\(seen)")
        #expect(seen.last.map { $0.0 == .completed && !$0.2 } == true, "\(seen)")
    }

    /// Cancelling or removing a download deletes its part file by path: never one a live process
    /// holds, nor one tagged for another download (whose waiting claim took the name while this
    /// download's own file was gone).
    @Test func aCancelDeletesOnlyItsOwnPartFile() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let mine = Download.ID.make().rawValue
        try Self.leaveTaggedPartFile(f.path("a.swoop"), bytes: 10, tag: Download.ID.make().rawValue)
        PartFile.remove(f.path("a.swoop"), of: mine)
        #expect(fileSize(f.path("a.swoop")) == 10)
        try Self.leaveTaggedPartFile(f.path("b.swoop"), bytes: 10, tag: mine)
        PartFile.remove(f.path("b.swoop"), of: mine)
        #expect(!FileSystem.exists(f.path("b.swoop")))
        _ = FileManager.default.createFile(atPath: f.path("c.swoop"), contents: Data(count: 10))
        let held = try #require(try PartFile.open(f.path("c.swoop"), exclusive: false))
        PartFile.remove(f.path("c.swoop"), of: mine)
        #expect(fileSize(f.path("c.swoop")) == 10)
        held.unlock()
        PartFile.remove(f.path("c.swoop"), of: mine)
        #expect(!FileSystem.exists(f.path("c.swoop")))
    }

    /// A download stopped by a crash before its claim names no file; removing it with its file
    /// (`swoop rm --delete-file`), or cancelling it, deletes the part file tagged with its id under
    /// its URL's name or the next ones, and nothing else: not another download's, not untagged bytes.
    @Test(arguments: [false, true])
    func removingADownloadNeverNamedDeletesItsTaggedPartFile(cancelling: Bool) async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let store = InMemoryDownloadStore()
        var record = DownloadRecord(url: f.server.url("/dir/t.bin"), directory: f.directory, requestedName: "", bootID: "b")
        record.state = .interrupted
        try store.save(record)
        try Self.leaveTaggedPartFile(f.path("t.bin.swoop"), bytes: 1000, tag: Download.ID.make().rawValue)
        try Self.leaveTaggedPartFile(f.path("t.1.bin.swoop"), bytes: 1000, tag: record.id.rawValue)
        _ = FileManager.default.createFile(atPath: f.path("t.2.bin.swoop"), contents: Data(count: 10))
        let manager = try DownloadManager(configuration: f.configuration, store: store)
        if cancelling {
            try await manager.cancel(record.id)
            #expect(try store.record(id: record.id)?.state == .removed)
        } else {
            try await manager.remove(record.id, deletingFile: true)
            #expect(try store.record(id: record.id) == nil)
        }
        #expect(f.files() == ["t.2.bin.swoop", "t.bin.swoop"])
    }

    /// `swoop ls --orphans`: a part file tagged for an unfinished download is that download's (the
    /// next run takes it back), not an orphan; one tagged for a finished or unknown download, or not
    /// tagged and named by no record, is.
    @Test func aPartFileTaggedForAnUnfinishedDownloadIsNoOrphan() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        var unfinished = DownloadRecord(url: f.server.url("/a.bin"), directory: f.directory, requestedName: "", bootID: "b")
        unfinished.state = .interrupted
        var finished = DownloadRecord(url: f.server.url("/b.bin"), directory: f.directory, requestedName: "", bootID: "b")
        finished.state = .completed
        try Self.leaveTaggedPartFile(f.path("a.bin.swoop"), bytes: 1000, tag: unfinished.id.rawValue)
        try Self.leaveTaggedPartFile(f.path("b.bin.swoop"), bytes: 1000, tag: finished.id.rawValue)
        try Self.leaveTaggedPartFile(f.path("c.bin.swoop"), bytes: 1000, tag: Download.ID.make().rawValue)
        _ = FileManager.default.createFile(atPath: f.path("d.bin.swoop"), contents: Data(count: 10))
        #expect(DownloadManager.orphanedPartFiles([unfinished, finished]) == ["b.bin.swoop", "c.bin.swoop", "d.bin.swoop"].map(f.path))
    }

    private static let getPathAttribute = CFunctions.lookUp(
        "getxattr", as: (@convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int).self
    )

    /// Whether the file at `path` carries the claim tag.
    static func isTagged(_ path: String) -> Bool {
        (getPathAttribute?(path, PartFile.claimAttribute, nil, 0) ?? -1) > 0
    }

    static func leaveTaggedPartFile(_ path: String, bytes: Int, tag: String) throws {
        _ = FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x5A, count: bytes))
        let file = try #require(try PartFile.open(path, exclusive: false))
        #expect(file.tag(tag))
        file.unlock()
    }
}
