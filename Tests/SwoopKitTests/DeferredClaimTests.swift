import Foundation
import NIOConcurrencyHelpers
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

        let other = f.serve("/u.bin", size: 200_000, seed: 2)
        try Self.leaveTaggedPartFile(f.path("u.bin.swoop"), bytes: 1000, tag: Download.ID.make().rawValue)
        let (second, _) = await f.download(try f.request("/u.bin"), store: store)
        #expect(try second.get().download.destination == f.path("u.1.bin"))
        #expect(sha256(file: f.path("u.1.bin")) == sha256(other))
        #expect(fileSize(f.path("u.bin.swoop")) == 1000)
    }

    /// Another URL's paused download holds the name the server gives, with no part file: the
    /// waiting claim is refused in the finishing group, the bytes are dropped, and the download is
    /// fetched again under the next name; the other download's record is as it was.
    @Test func aClaimRefusedAtTheFinishTakesTheNextName() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/get", size: 5000) { $0.contentDisposition = "attachment; filename=\"r.bin\"" }
        let (store, other) = try ClaimTests.storeWithPausedDownload(of: "r.bin", in: f)
        let (result, events) = await f.download(try f.request("/get?id=9"), store: store)
        #expect(try result.get().download.destination == f.path("r.1.bin"))
        #expect(sha256(file: f.path("r.1.bin")) == sha256(body))
        #expect(f.files() == ["r.1.bin"])
        #expect(f.server.requests(to: "/get").count == 2)
        let notices = events.compactMap { event -> String? in
            if case .notice(_, let text) = event { return text }
            return nil
        }
        #expect(notices.contains { $0.hasPrefix("\(f.path("r.bin.swoop")) is in use by the download of \(other.url); choosing another name") })
        #expect(try store.record(id: other.id)?.fileName == "r.bin")
        #expect(try store.record(id: other.id)?.state == .paused)
    }

    /// A download whose part file went missing names `y.bin`; another URL's small file took the
    /// free name and was killed before its claim, leaving its bytes tagged with its id. The first
    /// download never continues those bytes (their length says nothing): it fetches from zero.
    @Test func bytesTaggedForAnotherDownloadAreNeverContinued() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/y.bin", size: 400_000)
        let store = try f.interrupted("/y.bin", total: body.count, committed: 0, synced: 0, partFile: [])
        try Self.leaveTaggedPartFile(f.path("y.bin.swoop"), bytes: 150_000, tag: Download.ID.make().rawValue)
        let (result, _) = await f.download(try f.request("/y.bin"), store: store)
        #expect(try result.get().download.destination == f.path("y.bin"))
        #expect(sha256(file: f.path("y.bin")) == sha256(body))
        #expect(f.files() == ["y.bin"])
        #expect(f.server.requests(to: "/y.bin").allSatisfy { ($0.header("Range") ?? "bytes=0-").hasPrefix("bytes=0-") })
        let final = try #require(try PartFile.open(f.path("y.bin"), exclusive: false))
        #expect(final.taggedDownload == nil)
    }

    static func leaveTaggedPartFile(_ path: String, bytes: Int, tag: String) throws {
        FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x5A, count: bytes))
        let file = try #require(try PartFile.open(path, exclusive: false))
        #expect(file.tag(tag))
        file.unlock()
    }
}
