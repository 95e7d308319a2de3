import Foundation
import NIOConcurrencyHelpers
import SwoopTesting
import Testing

@testable import SwoopKit

/// `Transfer.finish()` records a download `completed` (durably) before it renames `NAME.swoop` to
/// `NAME`. A process that stopped between the two leaves a completed record beside its part file;
/// the next run of the same download, or `reconcile()`, finishes the rename.
@Suite("A completed record whose rename was interrupted", .timeLimit(.minutes(1)))
struct InterruptedPublishTests {
    /// The order itself: when the `completed` record is written (durably), the file still has its
    /// part name, and the recorded size and time are the part file's, which the rename keeps.
    @Test func completionIsRecordedDurablyBeforeTheRename() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/o.bin", size: 300_000)
        let (store, completions) = completionObservingStore(part: f.path("o.bin.swoop"), final: f.path("o.bin"))
        let done = try await f.download(try f.request("/o.bin"), store: store).result.get().download

        let seen = completions.withLockedValue { $0 }
        try #require(seen.count == 1)
        #expect(seen[0].durable)
        #expect(seen[0].part?.size == body.count)
        #expect(seen[0].part?.modified == seen[0].record.finalModified)
        #expect(seen[0].record.finalSize == body.count)
        #expect(seen[0].finalExisted == false)
        let final = try #require(FileSystem.sizeAndModified(f.path("o.bin")))
        #expect(final.size == seen[0].record.finalSize)
        #expect(final.modified == seen[0].record.finalModified)
        #expect(f.files() == ["o.bin"])
        #expect(sha256(file: f.path("o.bin")) == sha256(body))
        #expect(try store.record(id: done.id)?.state == .completed)
    }

    /// Stopped after recording completion, before the rename: the rerun renames the part file and
    /// asks the server for nothing.
    @Test func theRerunRenamesThePartFileWithoutARequest() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/a.bin", size: 300_000)
        let store = InMemoryDownloadStore()
        let id = try await f.downloadThenUnpublish("/a.bin", as: "a.bin", store: store)

        let (result, events) = await f.download(try f.request("/a.bin"), store: store)
        guard case .alreadyComplete(let done) = try result.get() else {
            Issue.record("expected already complete, got \(String(describing: try? result.get()))")
            return
        }
        #expect(done.id == id)
        #expect(done.destination == f.path("a.bin"))
        #expect(f.server.requests(to: "/a.bin").count == 1)
        #expect(f.files() == ["a.bin"])
        #expect(sha256(file: f.path("a.bin")) == sha256(body))
        #expect(try store.record(id: id)?.state == .completed)
        #expect(events.notices.isEmpty)
    }

    /// Killed between the `link` that published the file and the `unlink` of its part name: the
    /// record is completed and both names are one file. The rerun drops the part name.
    @Test func theRerunDropsAPartNameThatIsAHardLinkOfTheFinalFile() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/l.bin", size: 300_000)
        let store = InMemoryDownloadStore()
        let id = try await f.download(try f.request("/l.bin"), store: store).result.get().download.id
        try #require(link(f.path("l.bin"), f.path("l.bin.swoop")) == 0)
        try #require(FileSystem.isSameFile(f.path("l.bin"), f.path("l.bin.swoop")))
        #expect(try store.record(id: id)?.state == .completed)

        let (result, events) = await f.download(try f.request("/l.bin"), store: store)
        guard case .alreadyComplete(let done) = try result.get() else {
            Issue.record("expected already complete, got \(String(describing: try? result.get()))")
            return
        }
        #expect(done.id == id)
        #expect(f.server.requests(to: "/l.bin").count == 1)
        #expect(f.files() == ["l.bin"])
        #expect(sha256(file: f.path("l.bin")) == sha256(body))
        #expect(events.notices.isEmpty)
    }

    /// `reconcile()` (run by `swoop get` and `swoop resume` at start) finishes an interrupted rename
    /// too, and says so in `published`; the file is then as recorded, so it is not a changed file.
    @Test(arguments: [false, true])
    func reconcileFinishesTheRenameAndReportsItPublished(linked: Bool) async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/r.bin", size: 300_000)
        let store = InMemoryDownloadStore()
        let id: Download.ID
        if linked {
            id = try await f.download(try f.request("/r.bin"), store: store).result.get().download.id
            try #require(link(f.path("r.bin"), f.path("r.bin.swoop")) == 0)
        } else {
            id = try await f.downloadThenUnpublish("/r.bin", as: "r.bin", store: store)
        }
        let before = try #require(try store.record(id: id))

        let manager = try DownloadManager(configuration: f.configuration, store: store)
        let report = try await manager.reconcile()
        try await manager.shutdown()
        #expect(report.published == [id])
        #expect(report.changedFiles.isEmpty)
        #expect(report.recovered.isEmpty)
        #expect(report.orphanedPartFiles.isEmpty)
        #expect(f.files() == ["r.bin"])
        #expect(sha256(file: f.path("r.bin")) == sha256(body))
        let after = try #require(try store.record(id: id))
        #expect(after.state == .completed)
        #expect(after.lastError == nil)
        #expect(after.finalSize == before.finalSize)
        #expect(after.finalModified == before.finalModified)
        #expect(f.server.requests(to: "/r.bin").count == 1)
    }

    /// A part file of another size is not the one recorded: the rerun says the file was removed and
    /// downloads it again. That part file is someone's data now and is left as it is, so the new
    /// download takes the next free name.
    @Test func aPartFileOfAnotherSizeIsNotPublished() async throws {
        let change = PartFileChange.size
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/d.bin", size: 300_000)
        let store = InMemoryDownloadStore()
        let id = try await f.downloadThenUnpublish("/d.bin", as: "d.bin", store: store)
        let recorded = try #require(try store.record(id: id))
        let part = f.path("d.bin.swoop")
        try change.apply(to: part)
        let changed = try #require(FileSystem.sizeAndModified(part))
        #expect(changed.size != recorded.finalSize || changed.modified != recorded.finalModified)
        let leftover = try #require(sha256(file: part))

        let (result, events) = await f.download(try f.request("/d.bin"), store: store)
        guard case .downloaded(let done) = try result.get() else {
            Issue.record("expected a new download, got \(String(describing: try? result.get()))")
            return
        }
        #expect(events.notices.contains("\(f.path("d.bin")) was removed; downloading it again"))
        #expect(f.server.requests(to: "/d.bin").count == 2)
        #expect(done.id == id)
        #expect(done.destination == f.path("d.1.bin"))
        #expect(sha256(file: f.path("d.1.bin")) == sha256(body))
        #expect(f.files() == ["d.1.bin", "d.bin.swoop"])
        #expect(sha256(file: part) == leftover)
        let stored = try #require(try store.record(id: id))
        #expect(stored.state == .completed)
        #expect(stored.fileName == "d.1.bin")
    }

    /// A part file of the recorded size whose modification time differs (after a power loss the
    /// time on disk may predate the record) is checked with the server, not thrown away: a range
    /// request from its end under `If-Range` gets 416, and the file is renamed.
    @Test func aPartFileWithAnotherTimeIsCheckedWithTheServerAndRenamed() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/t.bin", size: 300_000)
        let store = InMemoryDownloadStore()
        let id = try await f.downloadThenUnpublish("/t.bin", as: "t.bin", store: store)
        let part = f.path("t.bin.swoop")
        try PartFileChange.modificationTime.apply(to: part)

        let (result, events) = await f.download(try f.request("/t.bin"), store: store)
        let done = try result.get().download
        #expect(events.notices.contains("\(part) holds the completed download but was not renamed; checking it with the server"))
        let requests = f.server.requests(to: "/t.bin")
        #expect(requests.count == 2)
        #expect(requests.last?.header("Range") == "bytes=300000-")
        #expect(requests.last?.header("If-Range") == "\"v1\"")
        #expect(done.id == id)
        #expect(done.destination == f.path("t.bin"))
        #expect(sha256(file: f.path("t.bin")) == sha256(body))
        #expect(f.files() == ["t.bin"])
        #expect(try store.record(id: id)?.state == .completed)
    }
}

/// How a test makes a part file differ from its completed record.
enum PartFileChange: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// One byte more, with the recorded modification time put back.
    case size
    /// The same bytes, modified a second later than recorded.
    case modificationTime

    var testDescription: String { rawValue }

    func apply(to path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else { throw posixError() }
        var mtime = info.st_mtim
        switch self {
        case .size:
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data([0x2a]))
            try handle.close()
        case .modificationTime:
            mtime.tv_sec += 1
        }
        let times = [info.st_atim, mtime]
        guard utimensat(AT_FDCWD, path, times, 0) == 0 else { throw posixError() }
    }
}

extension Fixture {
    /// Downloads `path` once into `store`, then renames the final file `name` back to its part
    /// name: what a process stopped between recording completion and the rename leaves (a rename
    /// keeps size and modification time, so the part file is the one recorded). Returns the id.
    func downloadThenUnpublish(
        _ path: String, as name: String, store: InMemoryDownloadStore
    ) async throws -> Download.ID {
        let done = try await download(try request(path), store: store).result.get().download
        let final = self.path(name)
        let part = self.path(name + ".swoop")
        guard rename(final, part) == 0 else { throw posixError() }
        let record = try #require(try store.record(id: done.id))
        let stat = try #require(FileSystem.sizeAndModified(part))
        #expect(record.state == .completed)
        #expect(record.finalSize == stat.size)
        #expect(record.finalModified == stat.modified)
        #expect(files() == [name + ".swoop"])
        return done.id
    }
}

/// What the store saw when a record was updated to `completed`: whether the write was durable and
/// what the download's part and final names showed at that moment.
struct Completion: Sendable {
    var record: DownloadRecord
    var durable: Bool
    var part: (size: Int, modified: Double)?
    var finalExisted: Bool
}

/// A store that notes every update to `completed` of the download with these part and final paths.
func completionObservingStore(part: String, final: String) -> (ObservedStore, NIOLockedValueBox<[Completion]>) {
    let seen = NIOLockedValueBox<[Completion]>([])
    let store = ObservedStore { record, durable in
        guard record.state == .completed else { return }
        let completion = Completion(
            record: record, durable: durable, part: FileSystem.sizeAndModified(part), finalExisted: FileSystem.exists(final)
        )
        seen.withLockedValue { $0.append(completion) }
    }
    return (store, seen)
}

/// The error of the last failed system call.
private func posixError() -> POSIXError {
    POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
}
