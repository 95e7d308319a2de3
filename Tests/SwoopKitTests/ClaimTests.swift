import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

/// Claiming a file name: a name another download will resume into is never taken, whether its
/// part file exists (empty, as a process killed early leaves it) or not.
@Suite("Claiming a file name", .timeLimit(.minutes(1)))
struct ClaimTests {
    /// A store holding a paused download of another URL whose file in `f`'s directory is `name`.
    static func storeWithPausedDownload(of name: String, in f: Fixture) throws -> (InMemoryDownloadStore, DownloadRecord) {
        let store = InMemoryDownloadStore()
        var other = DownloadRecord(url: f.server.url("/elsewhere/\(name)"), directory: f.directory, requestedName: "", bootID: "b")
        other.fileName = name
        other.state = .paused
        try store.save(other)
        return (store, other)
    }

    /// A name the server gives (known only from the answer) that another URL's unfinished download
    /// will resume into, with no part file yet: the store refuses the claim, the part file made for
    /// it goes again, and the download takes the next name (or fails, under `fail`).
    @Test(arguments: [CollisionPolicy.rename, .fail])
    func aNameAnotherUnfinishedDownloadHoldsIsNotClaimed(policy: CollisionPolicy) async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/get", size: 1000) { $0.contentDisposition = "attachment; filename=\"c.bin\"" }
        let (store, other) = try Self.storeWithPausedDownload(of: "c.bin", in: f)
        var request = try f.request("/get?id=3")
        request.collisionPolicy = policy
        let (result, _) = await f.download(request, store: store)
        switch policy {
        case .rename:
            let outcome = try result.get()
            #expect(outcome.download.destination == f.path("c.1.bin"))
            #expect(sha256(file: f.path("c.1.bin")) == sha256(body))
            #expect(f.files() == ["c.1.bin"])
        default:
            guard case .failure(let error) = result else { Issue.record("should fail"); return }
            #expect(error.code == .destinationExists)
            #expect(error.message == "\(f.path("c.bin")) is in use by the download of \(other.url); choose another name")
            #expect(f.files() == [])
        }
        // The other download's record is as it was.
        #expect(try store.record(id: other.id)?.fileName == "c.bin")
        #expect(try store.record(id: other.id)?.url == other.url)
    }

    /// An empty part file whose name a paused download of another URL holds is that download's:
    /// never locked, adopted or removed by another, and the error names its holder.
    @Test(arguments: [CollisionPolicy.rename, .fail])
    func anEmptyPartFileAnotherDownloadHoldsIsLeftAlone(policy: CollisionPolicy) async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        // Named by the server: known only from the answer (a name known before is taken over: issue 11).
        let body = f.serve("/get", size: 1000) { $0.contentDisposition = "attachment; filename=\"d.bin\"" }
        let (store, other) = try Self.storeWithPausedDownload(of: "d.bin", in: f)
        _ = FileManager.default.createFile(atPath: f.path("d.bin.swoop"), contents: Data())
        var request = try f.request("/get?id=4")
        request.collisionPolicy = policy
        let (result, _) = await f.download(request, store: store)
        switch policy {
        case .rename:
            #expect(try result.get().download.destination == f.path("d.1.bin"))
            #expect(sha256(file: f.path("d.1.bin")) == sha256(body))
        default:
            guard case .failure(let error) = result else { Issue.record("should fail"); return }
            #expect(error.message == "\(f.path("d.bin")) is in use by the download of \(other.url) (\(f.path("d.bin.swoop")) exists); choose another name")
        }
        #expect(fileSize(f.path("d.bin.swoop")) == 0)
        #expect(try store.record(id: other.id)?.fileName == "d.bin")
    }
}
