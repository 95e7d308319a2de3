import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

@Suite("Downloads end to end against the test server", .timeLimit(.minutes(1)))
struct TransferTests {
    @Test func downloadsByteExactWithIdentityEncoding() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/data/file.bin", size: 3_000_000)
        var request = try f.request("/data/file.bin")
        request.headers = [("X-Custom", "yes")]
        var configuration = f.configuration
        configuration.userAgent = "swoop-test/1"
        let (result, events) = await f.download(request, configuration: configuration)
        let outcome = try result.get()
        #expect(outcome.download.destination == f.path("file.bin"))
        #expect(outcome.download.state == .completed)
        #expect(sha256(file: f.path("file.bin")) == sha256(body))
        #expect(f.files() == ["file.bin"])
        let sent = try #require(f.server.requests(to: "/data/file.bin").first)
        #expect(sent.header("Accept-Encoding") == "identity")
        #expect(sent.header("User-Agent") == "swoop-test/1")
        #expect(sent.header("X-Custom") == "yes")
        #expect(sent.header("Range") == nil)
        guard case .completed = events.last else {
            Issue.record("last event should be completed, got \(String(describing: events.last))")
            return
        }
    }

    @Test(arguments: [false, true])
    func cutConnectionResumesWithValidatedRange(reset: Bool) async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/f.bin", size: 2_000_000)
        f.server.enqueue("/f.bin", .cutAfter(bytes: 700_000, reset: reset))
        let (result, _) = await f.download(try f.request("/f.bin"))
        _ = try result.get()
        #expect(sha256(file: f.path("f.bin")) == sha256(body))
        let requests = f.server.requests(to: "/f.bin")
        #expect(requests.count == 2)
        let range = try #require(requests.last?.header("Range"))
        let offset = try #require(Int(range.dropFirst("bytes=".count).dropLast()))
        #expect(offset > 0 && offset <= 700_000)
        #expect(requests.last?.header("If-Range") == "\"v1\"")
        // Only what was lost in flight is fetched again.
        #expect(f.server.bodyBytesSent(to: "/f.bin") - body.count <= 700_000 - offset)
    }

    @Test func lastModifiedIsTheValidatorWithoutStrongETag() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/w.bin", size: 1_000_000, etag: "W/\"weak\"")
        f.server.enqueue("/w.bin", .cutAfter(bytes: 400_000))
        _ = try await f.download(try f.request("/w.bin")).result.get()
        #expect(sha256(file: f.path("w.bin")) == sha256(body))
        #expect(f.server.requests(to: "/w.bin").last?.header("If-Range") == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test func ignoredRangeRestartsFromZeroInATruncatedFile() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/f.bin", size: 1_500_000)
        f.server.enqueue("/f.bin", .cutAfter(bytes: 900_000), .ignoreRange)
        let (result, events) = await f.download(try f.request("/f.bin"))
        _ = try result.get()
        #expect(sha256(file: f.path("f.bin")) == sha256(body))
        #expect(events.notices.contains { $0.contains("ignored the range") })
    }

    @Test func serverWithoutRangesStillFinishesAfterManyCuts() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/f.bin", size: 600_000) { $0.acceptRanges = false }
        for cut in [100_000, 200_000, 300_000, 400_000, 500_000] {
            f.server.enqueue("/f.bin", .cutAfter(bytes: cut))
        }
        let (result, events) = await f.download(try f.request("/f.bin"))
        _ = try result.get()
        #expect(sha256(file: f.path("f.bin")) == sha256(body))
        #expect(f.server.requests(to: "/f.bin").count == 6)
        #expect(events.notices.filter { $0.contains("ignored the range") }.count == 5)
    }

    @Test func changedFileRestartsAndSaysWhy() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        f.serve("/f.bin", size: 1_000_000)
        let newBody = Resource.random(size: 1_200_000, seed: 99)
        f.server.enqueue(
            "/f.bin", .cutAfter(bytes: 500_000),
            .replaceResource(Resource(body: newBody, etag: "\"v2\"", lastModified: "Mon, 07 Nov 1994 08:49:37 GMT"))
        )
        let (result, events) = await f.download(try f.request("/f.bin"))
        _ = try result.get()
        #expect(sha256(file: f.path("f.bin")) == sha256(newBody))
        #expect(events.notices.contains { $0.contains("changed on the server") && $0.contains("\"v2\"") })
    }

    @Test(arguments: [Behavior.wrongContentRangeStart(5), .wrongContentRangeTotal(10_000_000)])
    func badContentRangeNeverSplices(behavior: Behavior) async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/f.bin", size: 1_000_000)
        f.server.enqueue("/f.bin", .cutAfter(bytes: 300_000), behavior)
        let (result, events) = await f.download(try f.request("/f.bin"))
        _ = try result.get()
        #expect(sha256(file: f.path("f.bin")) == sha256(body))
        #expect(events.notices.contains { $0.contains("starting over") })
        // The third request starts from zero without a range.
        #expect(f.server.requests(to: "/f.bin").last?.header("Range") == nil)
    }

    @Test func completePartFileIsFinishedBy416() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/f.bin", size: 100_000)
        let store = try f.interrupted("/f.bin", total: body.count, committed: body.count, synced: 0, partFile: body)
        _ = try await f.download(try f.request("/f.bin"), store: store).result.get()
        #expect(sha256(file: f.path("f.bin")) == sha256(body))
        #expect(f.server.requests(to: "/f.bin").map { $0.header("Range") } == ["bytes=100000-"])
        #expect(f.server.bodyBytesSent(to: "/f.bin") == 0)
    }

    @Test func afterAMachineCrashOnlySyncedBytesAreTrusted() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/f.bin", size: 1_000_000)
        // After the crash the unsynced tail holds garbage.
        let store = try f.interrupted(
            "/f.bin", total: body.count, committed: 600_000, synced: 200_000,
            partFile: Array(body[0..<200_000]) + [UInt8](repeating: 0, count: 400_000), bootID: "an-earlier-boot"
        )
        _ = try await f.download(try f.request("/f.bin"), store: store).result.get()
        #expect(sha256(file: f.path("f.bin")) == sha256(body))
        #expect(f.server.requests(to: "/f.bin").first?.header("Range") == "bytes=200000-")
    }

    @Test func sameBootTrustsCommittedBytesButNeverMoreThanTheFileHolds() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/f.bin", size: 1_000_000)
        let store = try f.interrupted("/f.bin", total: body.count, committed: 600_000, synced: 0, partFile: Array(body[0..<450_000]))
        _ = try await f.download(try f.request("/f.bin"), store: store).result.get()
        #expect(sha256(file: f.path("f.bin")) == sha256(body))
        #expect(f.server.requests(to: "/f.bin").first?.header("Range") == "bytes=450000-")
    }

    @Test func chunkedBodyWithoutLength() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/c.bin", size: 800_000) { $0.chunked = true }
        let (result, events) = await f.download(try f.request("/c.bin"))
        #expect(try result.get().download.totalBytes == body.count)
        #expect(sha256(file: f.path("c.bin")) == sha256(body))
        let started = events.compactMap { if case .started(let d) = $0 { return d } else { return nil } }
        #expect(started.first?.totalBytes == nil)
    }

    @Test func gzipBodyIsSavedAsSent() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/g.gz", size: 50_000) { $0.gzip = true }
        _ = try await f.download(try f.request("/g.gz")).result.get()
        #expect(sha256(file: f.path("g.gz")) == sha256(body))
    }

    @Test func shortBodyIsRetriedFromWhereItStopped() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/s.bin", size: 500_000)
        f.server.enqueue("/s.bin", .contentLengthOverride(600_000))
        let (result, _) = await f.download(try f.request("/s.bin"))
        // The first answer claimed 600,000 bytes: the resume then finds the length changed and restarts.
        _ = try result.get()
        #expect(sha256(file: f.path("s.bin")) == sha256(body))
    }

    @Test func stalledConnectionHitsTheIdleTimeoutAndResumes() async throws {
        var f = try await Fixture.make()
        defer { f.stop() }
        // Long enough that the first 250,000 bytes arrive before it on a loaded machine (the browser
        // tests' Chromium runs beside this one: with 2 s, once none had).
        f.configuration.timeouts.idle = .seconds(5)
        let body = f.serve("/f.bin", size: 1_000_000)
        f.server.enqueue("/f.bin", .stallAfter(bytes: 250_000))
        let (result, events) = await f.download(try f.request("/f.bin"))
        _ = try result.get()
        #expect(sha256(file: f.path("f.bin")) == sha256(body))
        #expect(events.notices.contains { $0.contains("no data") && $0.contains("retrying") })
        #expect(f.server.requests(to: "/f.bin").last?.header("Range") != nil)
    }

    @Test(arguments: [503, 429, 408, 500])
    func transientStatusIsRetriedHonouringRetryAfter(status: Int) async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/f.bin", size: 10_000)
        f.server.enqueue("/f.bin", .status(status, headers: [("Retry-After", "1")], body: "come back later"))
        let (result, events) = await f.download(try f.request("/f.bin"))
        _ = try result.get()
        #expect(sha256(file: f.path("f.bin")) == sha256(body))
        #expect(events.notices.contains { $0.contains("HTTP \(status)") && $0.contains("retrying in 1s") })
        #expect(f.server.requests(to: "/f.bin").count == 2)
    }

    @Test func retriesRunOutWithTheStatusInTheMessage() async throws {
        var f = try await Fixture.make()
        defer { f.stop() }
        f.configuration.retry.maxRetries = 2
        f.serve("/f.bin", size: 10)
        f.server.setDefault("/f.bin", .status(502, body: "bad gateway body"))
        let (result, _) = await f.download(try f.request("/f.bin"))
        guard case .failure(let error) = result else { Issue.record("should fail"); return }
        #expect(error.code == .httpStatus)
        #expect(error.status == 502)
        #expect(error.message == "HTTP 502 Bad Gateway from \(f.server.url("/f.bin"))")
        #expect(f.server.requests(to: "/f.bin").count == 3)
        #expect(f.files().isEmpty)
    }

    @Test(arguments: [404, 403, 401, 410])
    func clientErrorsFailAtOnceAndWriteNothing(status: Int) async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        f.serve("/f.bin", size: 10)
        f.server.setDefault("/f.bin", .status(status, body: "error page that must not become the file"))
        let (result, events) = await f.download(try f.request("/f.bin"))
        guard case .failure(let error) = result else { Issue.record("should fail"); return }
        #expect(error.status == status)
        #expect(error.message.contains("HTTP \(status)") && error.message.contains(f.server.url("/f.bin")))
        #expect(!error.isRetryable)
        #expect(f.server.requests(to: "/f.bin").count == 1)
        #expect(f.files().isEmpty)
        guard case .failed = events.last else { Issue.record("expected a failed event"); return }
    }

    @Test func hugeHeadersAreAClearErrorNotACrash() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        f.serve("/h.bin", size: 10)
        f.server.setDefault("/h.bin", .hugeHeaders(bytes: 200_000))
        let (result, _) = await f.download(try f.request("/h.bin"))
        guard case .failure(let error) = result else { Issue.record("should fail"); return }
        #expect(error.message.contains(f.server.url("/h.bin")))
        #expect(f.files().isEmpty)
    }

    @Test func connectionRefusedIsRetriedThenReported() async throws {
        var f = try await Fixture.make()
        defer { f.stop() }
        f.configuration.retry.maxRetries = 1
        // Bound, not listening: refused, and no other test's server can take the port meanwhile.
        let refusing = try TestPort(listening: false)
        let (result, _) = await f.download(try DownloadRequest(url: refusing.url("/f.bin"), directory: f.directory))
        withExtendedLifetime(refusing) {}
        guard case .failure(let error) = result else { Issue.record("should fail"); return }
        #expect(error.code == .network)
        #expect(error.message.contains("127.0.0.1"))
        #expect(f.files().isEmpty)
    }

    @Test func cancellationPausesAndTheNextRunContinues() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/f.bin", size: 2_000_000)
        f.server.enqueue("/f.bin", .stallAfter(bytes: 1_200_000))
        let store = InMemoryDownloadStore()
        let manager = try DownloadManager(configuration: f.configuration, store: store)
        let request = try f.request("/f.bin")
        let task = Task { try await manager.download(request) }
        // Cancel while the transfer waits on the stalled connection, once it has written all it got.
        #expect(await f.partFileReaches("f.bin", size: 1_200_000))
        task.cancel()
        let result = await task.result
        #expect(throws: SwoopError.self) { try result.get() }
        let saved = try #require(try store.all().first)
        #expect(saved.state == .interrupted)
        #expect(saved.committedBytes == 1_200_000)
        #expect(!FileManager.default.fileExists(atPath: f.path("f.bin")))
        _ = try await manager.download(request)
        try await manager.shutdown()
        #expect(sha256(file: f.path("f.bin")) == sha256(body))
        #expect(f.server.requests(to: "/f.bin").last?.header("Range") == "bytes=\(saved.committedBytes)-")
    }
}
