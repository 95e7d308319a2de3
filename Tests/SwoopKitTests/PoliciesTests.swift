import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

@Suite("Names, collisions, checksums, redirects, TLS and locks", .timeLimit(.minutes(1)))
struct PoliciesTests {
    @Test func contentDispositionNamesTheFile() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/download", size: 1000) { $0.contentDisposition = "attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf" }
        _ = try await f.download(try f.request("/download?id=7")).result.get()
        #expect(f.files() == ["résumé.pdf"])
        #expect(sha256(file: f.path("résumé.pdf")) == sha256(body))
    }

    @Test(arguments: [
        "attachment; filename=\"../../../../tmp/evil.sh\"",
        "attachment; filename=\"/etc/passwd\"",
        "attachment; filename=\"..\\\\..\\\\win.ini\"",
        "attachment; filename=\"a\u{202E}gpj.exe\"",
        "attachment; filename=\"..\"",
    ])
    func hostileNamesStayInsideTheDirectory(header: String) async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        f.serve("/x/payload.bin", size: 100) { $0.contentDisposition = header }
        let outcome = try await f.download(try f.request("/x/payload.bin")).result.get()
        let destination = try #require(outcome.download.destination)
        #expect((destination as NSString).deletingLastPathComponent == f.directory)
        let name = (destination as NSString).lastPathComponent
        #expect(!name.contains("/") && !name.contains("\u{202E}") && name != ".." && name != ".")
        #expect(f.files() == [name])
    }

    @Test func existingFileIsNeverSilentlyOverwritten() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/a.tar.gz", size: 1000)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: f.path("a.tar.gz")))
        let outcome = try await f.download(try f.request("/a.tar.gz")).result.get()
        #expect(outcome.download.destination == f.path("a.1.tar.gz"))
        #expect(try String(contentsOfFile: f.path("a.tar.gz"), encoding: .utf8) == "mine")
        #expect(sha256(file: f.path("a.1.tar.gz")) == sha256(body))
    }

    /// Another URL's unfinished download to "a.bin" (a link re-signed, a mirror) is taken over by
    /// the new URL, never copied to `a.1.bin`: one record, now naming the new URL (issue 11).
    @Test func aNameAnUnfinishedDownloadOfAnotherURLWritesIsTakenOverNotCopied() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/a.bin", size: 1000)
        let store = InMemoryDownloadStore()
        var other = DownloadRecord(url: f.server.url("/other/a.bin"), directory: f.directory, requestedName: "", bootID: "b")
        other.fileName = "a.bin"
        other.state = .paused
        try store.save(other)
        let outcome = try await f.download(try f.request("/a.bin"), store: store).result.get()
        #expect(outcome.download.destination == f.path("a.bin"))
        #expect(outcome.download.id == other.id)
        #expect(sha256(file: f.path("a.bin")) == sha256(body))
        #expect(try store.all().map(\.url) == [f.server.url("/a.bin")])
    }

    @Test(arguments: [CollisionPolicy.fail, .overwrite])
    func aForeignPartFileIsNeverTakenOver(policy: CollisionPolicy) async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        f.serve("/a.bin", size: 1000)
        try Data("someone else's bytes".utf8).write(to: URL(fileURLWithPath: f.path("a.bin.swoop")))
        var request = try f.request("/a.bin")
        request.collisionPolicy = policy
        let (result, _) = await f.download(request)
        guard case .failure(let error) = result else { Issue.record("should fail"); return }
        #expect(error.code == .destinationExists)
        #expect(error.message == "\(f.path("a.bin")) is in use (\(f.path("a.bin.swoop")) exists); choose another name")
        #expect(try String(contentsOfFile: f.path("a.bin.swoop"), encoding: .utf8) == "someone else's bytes")
    }

    @Test func aCrashBetweenRenameAndRecordIsRecognisedAsComplete() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/a.bin", size: 5000)
        let store = try f.interrupted("/a.bin", total: body.count, committed: body.count, synced: body.count, partFile: body)
        try FileManager.default.moveItem(atPath: f.path("a.bin.swoop"), toPath: f.path("a.bin"))
        let outcome = try await f.download(try f.request("/a.bin"), store: store).result.get()
        guard case .alreadyComplete = outcome else { Issue.record("expected already complete"); return }
        #expect(f.server.requests.isEmpty)
        #expect(f.files() == ["a.bin"])
        #expect(try store.all().first?.state == .completed)
    }

    /// Killed between the `link` that published the file and the `unlink` of the part name: both
    /// names exist for one file; the rerun finishes the step and reports the file complete.
    @Test func aCrashBetweenLinkAndUnlinkIsRecognisedAsComplete() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/l.bin", size: 5000)
        let store = try f.interrupted("/l.bin", total: body.count, committed: body.count, synced: body.count, partFile: body)
        try FileManager.default.linkItem(atPath: f.path("l.bin.swoop"), toPath: f.path("l.bin"))
        let outcome = try await f.download(try f.request("/l.bin"), store: store).result.get()
        guard case .alreadyComplete = outcome else { Issue.record("expected already complete, got \(outcome)"); return }
        #expect(f.server.requests.isEmpty)
        #expect(f.files() == ["l.bin"])
        #expect(sha256(file: f.path("l.bin")) == sha256(body))
    }

    /// A process killed between creating the part file and recording its name leaves an empty,
    /// unclaimed part file: the rerun takes it (not `name.1.ext`). A part file with bytes that no
    /// record owns is someone's data: it is left alone and the download picks another name.
    @Test func anEmptyLeftoverPartFileIsTakenOneWithBytesIsLeftAlone() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/left.bin", size: 50_000)
        _ = FileManager.default.createFile(atPath: f.path("left.bin.swoop"), contents: Data())
        let (result, _) = await f.download(try f.request("/left.bin"))
        #expect(try result.get().download.destination == f.path("left.bin"))
        #expect(sha256(file: f.path("left.bin")) == sha256(body))
        #expect(f.files() == ["left.bin"])

        let other = f.serve("/kept.bin", size: 50_000, seed: 2)
        _ = FileManager.default.createFile(atPath: f.path("kept.bin.swoop"), contents: Data("someone's bytes".utf8))
        let (second, _) = await f.download(try f.request("/kept.bin"))
        #expect(try second.get().download.destination == f.path("kept.1.bin"))
        #expect(sha256(file: f.path("kept.1.bin")) == sha256(other))
        #expect(FileManager.default.contents(atPath: f.path("kept.bin.swoop")) == Data("someone's bytes".utf8))
    }

    @Test func overwritePolicyReplaces() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/a.bin", size: 1000)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: f.path("a.bin")))
        var request = try f.request("/a.bin")
        request.collisionPolicy = .overwrite
        _ = try await f.download(request).result.get()
        #expect(f.files() == ["a.bin"])
        #expect(sha256(file: f.path("a.bin")) == sha256(body))
    }

    @Test func failPolicyRefusesAndLeavesTheFileAlone() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        f.serve("/a.bin", size: 1000)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: f.path("a.bin")))
        var request = try f.request("/a.bin")
        request.collisionPolicy = .fail
        let (result, _) = await f.download(request)
        guard case .failure(let error) = result else { Issue.record("should fail"); return }
        #expect(error.code == .destinationExists)
        #expect(error.message.contains(f.path("a.bin")))
        #expect(f.files() == ["a.bin"])
    }

    @Test func outputNameIsUsed() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/a.bin", size: 1000)
        _ = try await f.download(try f.request("/a.bin", fileName: "chosen.dat")).result.get()
        #expect(f.files() == ["chosen.dat"])
        #expect(sha256(file: f.path("chosen.dat")) == sha256(body))
    }

    @Test func matchingChecksumPasses() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/a.bin", size: 300_000)
        var request = try f.request("/a.bin")
        request.checksum = try Checksum(parsing: "sha-256=\(sha256(body))")
        _ = try await f.download(request).result.get()
        #expect(sha256(file: f.path("a.bin")) == sha256(body))
    }

    @Test func checksumMismatchLeavesNoFinalFileAndNamesBothDigests() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/a.bin", size: 300_000)
        var request = try f.request("/a.bin")
        let wrong = String(repeating: "0", count: 64)
        request.checksum = try Checksum(parsing: "sha256=\(wrong)")
        let (result, _) = await f.download(request)
        guard case .failure(let error) = result else { Issue.record("should fail"); return }
        #expect(error.code == .checksumMismatch)
        #expect(error.message.contains(wrong) && error.message.contains(sha256(body)))
        #expect(!FileManager.default.fileExists(atPath: f.path("a.bin")))
    }

    @Test(arguments: ["sha-256=abc", "crc32=00", "sha-256", "md5=zz000000000000000000000000000000"])
    func badChecksumArgumentsAreRejected(text: String) {
        #expect(throws: SwoopError.self) { try Checksum(parsing: text) }
    }

    @Test func redirectsAreFollowedAndCredentialsStayHome() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let other = try await TestServer.start()
        defer { Task { try? await other.shutdown() } }
        let body = Resource.random(size: 5000, seed: 3)
        other.serve("/final.bin", Resource(body: body, etag: "\"x\""))
        f.server.setDefault("/start", .redirect(status: 302, location: "/hop"))
        f.server.setDefault("/hop", .redirect(status: 307, location: other.url("/final.bin")))
        var request = try f.request("/start")
        request.headers = [("Authorization", "Bearer secret"), ("Cookie", "s=1"), ("X-Keep", "1")]
        _ = try await f.download(request).result.get()
        #expect(f.files() == ["start"])
        #expect(sha256(file: f.path("start")) == sha256(body))
        #expect(f.server.requests(to: "/hop").first?.header("Authorization") == "Bearer secret")
        let foreign = try #require(other.requests(to: "/final.bin").first)
        #expect(foreign.header("Authorization") == nil)
        #expect(foreign.header("Cookie") == nil)
        #expect(foreign.header("X-Keep") == "1")
    }

    @Test func redirectLoopFailsClearly() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        f.server.setDefault("/a", .redirect(location: "/b"))
        f.server.setDefault("/b", .redirect(location: "/a"))
        let (result, _) = await f.download(try f.request("/a"))
        guard case .failure(let error) = result else { Issue.record("should fail"); return }
        #expect(error.code == .redirect)
        #expect(error.message.contains("loop"))
        #expect(f.files().isEmpty)
    }

    @Test func httpsToHttpRedirectIsRefused() async throws {
        let certificate = try TestCertificate.makeSelfSigned()
        var f = try await Fixture.make(tls: certificate)
        defer { f.stop() }
        f.configuration.tls.caCertificatePath = certificate.certificatePath
        f.server.setDefault("/a", .redirect(location: "http://127.0.0.1:9/a"))
        let (result, _) = await f.download(try f.request("/a"))
        guard case .failure(let error) = result else { Issue.record("should fail"); return }
        #expect(error.code == .redirect)
        #expect(error.message.contains("from https to http"))
    }

    @Test func selfSignedCertificateIsRejectedByDefault() async throws {
        let certificate = try TestCertificate.makeSelfSigned()
        let f = try await Fixture.make(tls: certificate)
        defer { f.stop() }
        f.serve("/a.bin", size: 1000)
        let (result, _) = await f.download(try f.request("/a.bin"))
        guard case .failure(let error) = result else { Issue.record("should fail"); return }
        #expect(error.code == .tls)
        #expect(error.message.contains(f.server.url("/a.bin")))
        #expect(f.files().isEmpty)
    }

    @Test(arguments: [false, true])
    func privateCAOrInsecureIsAccepted(insecure: Bool) async throws {
        let certificate = try TestCertificate.makeSelfSigned()
        var f = try await Fixture.make(tls: certificate)
        defer { f.stop() }
        if insecure { f.configuration.tls.insecure = true } else { f.configuration.tls.caCertificatePath = certificate.certificatePath }
        let body = f.serve("/a.bin", size: 200_000)
        _ = try await f.download(try f.request("/a.bin")).result.get()
        #expect(sha256(file: f.path("a.bin")) == sha256(body))
    }

    @Test func finishedDownloadIsRecognisedUntilTheFileChanges() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/a.bin", size: 10_000)
        let store = InMemoryDownloadStore()
        _ = try await f.download(try f.request("/a.bin"), store: store).result.get()
        let again = try await f.download(try f.request("/a.bin"), store: store).result.get()
        guard case .alreadyComplete = again else { Issue.record("expected already complete"); return }
        #expect(f.server.requests(to: "/a.bin").count == 1)

        try FileManager.default.removeItem(atPath: f.path("a.bin"))
        let (removed, events) = await f.download(try f.request("/a.bin"), store: store)
        guard case .downloaded = try removed.get() else { Issue.record("expected a new download"); return }
        #expect(events.notices.contains { $0.contains("was removed") })
        #expect(sha256(file: f.path("a.bin")) == sha256(body))

        try Data("edited".utf8).write(to: URL(fileURLWithPath: f.path("a.bin")))
        let changed = try await f.download(try f.request("/a.bin"), store: store).result.get()
        #expect(changed.download.destination == f.path("a.1.bin"))
        #expect(try String(contentsOfFile: f.path("a.bin"), encoding: .utf8) == "edited")
        #expect(try store.all().count == 1)
    }

    @Test func oneDownloadIsNeverWrittenByTwoAtOnce() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/a.bin", size: 1_000_000)
        f.server.enqueue("/a.bin", .stallAfter(bytes: 100_000))
        let store = InMemoryDownloadStore()
        let first = try DownloadManager(configuration: f.configuration, store: store)
        let events = first.events()
        let request = try f.request("/a.bin")
        let running = Task { try await first.download(request) }
        let started = await withTimeout {
            for await event in events { if case .started = event { return true } }
            return false
        }
        try #require(started == true, "the first download never started")
        let (second, _) = await f.download(request, store: store)
        guard case .failure(let error) = second else { Issue.record("second writer must be refused"); return }
        #expect(error.code == .inUse)
        #expect(error.message.contains("this swoop process (pid \(getpid()))"))
        running.cancel()
        _ = await running.result
        _ = try await first.download(request)
        try await first.shutdown()
        #expect(sha256(file: f.path("a.bin")) == sha256(body))
    }

    @Test func missingDirectoryFailsBeforeAnyRequest() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        f.serve("/a.bin", size: 10)
        let missing = f.directory + "/nope"
        let (result, _) = await f.download(try DownloadRequest(url: f.server.url("/a.bin"), directory: missing))
        guard case .failure(let error) = result else { Issue.record("should fail"); return }
        #expect(error.code == .fileSystem)
        #expect(error.message.contains(missing))
        #expect(f.server.requests.isEmpty)
    }

    @Test(arguments: ["ftp://h/x", "file:///etc/passwd", "not a url", "", "http://", "javascript:alert(1)"])
    func onlyHTTPAndHTTPSAreAccepted(url: String) {
        let error = #expect(throws: SwoopError.self) { try DownloadRequest(url: url, directory: "/tmp") }
        #expect(error?.code == .invalidURL || error?.code == .unsupportedScheme)
    }

    @Test func oneShotDownloadReportsProgress() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/big.bin", size: 4_000_000) { _ in }
        f.server.enqueue("/big.bin", .throttle(bytesPerSecond: 8_000_000))
        let seen = ProgressLog()
        let download = try await Swoop.download(from: f.server.url("/big.bin"), to: f.directory, configuration: f.configuration) {
            seen.append($0.completedBytes)
        }
        #expect(download.destination == f.path("big.bin"))
        #expect(sha256(file: f.path("big.bin")) == sha256(body))
        // Progress merges while the reader is behind (a loaded machine may leave one report): at
        // least one arrives, with bytes, and reports never go backwards.
        #expect(!seen.values.isEmpty)
        #expect((seen.values.last ?? 0) > 0)
        #expect(seen.values == seen.values.sorted())
    }
}

final class ProgressLog: @unchecked Sendable {  // guarded by the lock
    private let lock = NSLock()
    private var stored: [Int] = []
    func append(_ value: Int) { lock.withLock { stored.append(value) } }
    var values: [Int] { lock.withLock { stored } }
}
