import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

/// Rate limits through the manager against the real test server. Lower bounds on time only: an
/// upper bound is a benchmark's business (scripts/bench-ratelimit.py), not a shared machine's test.
///
/// Serialized: each test measures wall-clock time.
@Suite("Rate limits (manager)", .serialized, .timeLimit(.minutes(1)))
struct RateLimitTests {
    /// 1.5 MB at 500 KiB/s needs 2.93 s; the bucket starts empty, so nothing comes early.
    static let size = 1_500_000
    static let rate = 500 << 10
    static let lowerBound: Duration = .milliseconds(2700)

    static func timed<T>(_ body: () async throws -> T) async rethrows -> (T, Duration) {
        let start = ContinuousClock.now
        let value = try await body()
        return (value, ContinuousClock.now - start)
    }

    @Test func limitRateHoldsADownloadBack() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        let body = f.serve("/limited.bin", size: Self.size)
        f.configuration.limits.perDownloadBytesPerSecond = Self.rate
        let run = try f.start()
        let (ids, took) = try await Self.timed {
            let ids = [try await run.manager.add(try f.request("/limited.bin"))]
            #expect(await run.waitForTerminal(ids))
            return ids
        }
        #expect(took >= Self.lowerBound)
        #expect(run.events.terminal(ids[0]).map(\.caseName) == ["completed"])
        #expect(sha256(file: f.path("limited.bin")) == sha256(body))
        await run.stop()
    }

    @Test func aRequestsOwnRateHoldsADirectDownloadBack() async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let body = f.serve("/own.bin", size: Self.size)
        var request = try f.request("/own.bin")
        request.bytesPerSecond = Self.rate
        let (outcome, took) = await Self.timed { await f.download(request) }
        #expect(took >= Self.lowerBound)
        #expect((try? outcome.result.get()) != nil)
        #expect(sha256(file: f.path("own.bin")) == sha256(body))
    }

    @Test func twoDownloadsUnderTheOverallLimitShareIt() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        let first = f.serve("/a.bin", size: Self.size / 2, seed: 1)
        let second = f.serve("/b.bin", size: Self.size / 2, seed: 2)
        f.configuration.limits.overallBytesPerSecond = Self.rate
        let run = try f.start()
        let (_, took) = try await Self.timed {
            let ids = try await run.manager.add(contentsOf: [try f.request("/a.bin"), try f.request("/b.bin")])
            #expect(await run.waitForTerminal(ids))
        }
        #expect(took >= Self.lowerBound)
        // Both ran at once (the server's count cannot tell: its sends end in the socket buffers).
        let names = run.events.all.map(\.caseName)
        let firstCompleted = try #require(names.firstIndex(of: "completed"))
        #expect(names[..<firstCompleted].filter { $0 == "started" }.count == 2)
        #expect(sha256(file: f.path("a.bin")) == sha256(first))
        #expect(sha256(file: f.path("b.bin")) == sha256(second))
        await run.stop()
    }

    enum Raise: String, CaseIterable { case perDownload, byDefault, overall }

    @Test(arguments: Raise.allCases)
    func raisingTheLimitWhileRunningLetsTheDownloadFinish(raise: Raise) async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        // 4 MB at 64 KiB/s would take a minute (longer than the suite's time limit).
        let body = f.serve("/slow.bin", size: 4_000_000)
        if raise == .overall {
            f.configuration.limits.overallBytesPerSecond = 64 << 10
        } else {
            f.configuration.limits.perDownloadBytesPerSecond = 64 << 10
        }
        let run = try f.start()
        let id = try await run.manager.add(try f.request("/slow.bin"))
        #expect(await run.events.wait { $0.contains { $0.download.id == id && $0.caseName == "progress" } })
        switch raise {
        case .perDownload: try await run.manager.setRateLimit(id, bytesPerSecond: 100 << 20)
        case .byDefault: try await run.manager.setDefaultRateLimit(nil)
        case .overall: try await run.manager.setOverallRateLimit(nil)
        }
        #expect(await run.waitForTerminal([id]))
        #expect(run.events.terminal(id).map(\.caseName) == ["completed"])
        #expect(sha256(file: f.path("slow.bin")) == sha256(body))
        await run.stop()
    }

    @Test func aLimitGivenToAWaitingDownloadAppliesWhenItStarts() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.queue.maxConcurrentDownloads = 1
        f.serve("/first.bin", size: 200_000, seed: 1)
        f.server.setDefault("/first.bin", .throttle(bytesPerSecond: 400_000))
        f.serve("/second.bin", size: 2_000_000, seed: 2)
        let run = try f.start()
        let ids = try await run.manager.add(contentsOf: [try f.request("/first.bin"), try f.request("/second.bin")])
        try await run.manager.setRateLimit(ids[1], bytesPerSecond: 12_345)
        let limits = run.manager.rateLimits
        #expect(await eventually { limits.runningRate(ids[1]) == 12_345 })
        #expect(await run.waitForTerminal([ids[0]]))
        #expect(run.events.terminal(ids[0]).map(\.caseName) == ["completed"])
        await run.stop()
        #expect(limits.runningRate(ids[1]) == nil)
    }

    /// Bytes are paid for before they are written: at 1 KiB/s the first read (up to 8 KiB) waits
    /// at least a second whichever connection made it. When each connection wrote its first read
    /// at once and paid after, `-x 8` showed 7.8 MiB/s in its first second under a 5 MiB/s limit.
    @Test(arguments: [1, 4])
    func nothingIsWrittenBeforeItIsPaidFor(connections: Int) async throws {
        let f = try await SegmentedDownloadTests.fixture(connections: connections, minSplit: 16 << 10)
        defer { f.stop() }
        _ = f.serve("/paid.bin", size: 256 << 10)
        var request = try f.request("/paid.bin")
        request.bytesPerSecond = 1 << 10
        let download = Task { await f.download(request) }
        #expect(await eventually { f.server.requests(to: "/paid.bin").count >= connections })
        try await Task.sleep(for: .milliseconds(500))
        var status = stat()
        #expect(stat(f.path("paid.bin.swoop"), &status) == 0)
        #expect(status.st_blocks == 0, "\(status.st_blocks * 512) bytes written before they were paid for")
        download.cancel()
        _ = await download.value
    }

    @Test func aWaitLongerThanTheIdleTimeoutEndsTheAttemptAndTheRetryFinishes() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        // AHC reads ahead (several socket reads per wake-up) and runs its idle timeout while the body
        // is not read: draining that at 512 KiB/s takes longer than a 1 s idle timeout, so attempts
        // time out (3 requests when this was written). Each retry resumes at the offset: it finishes.
        f.configuration.timeouts.idle = .seconds(1)
        f.configuration.limits.perDownloadBytesPerSecond = 512 << 10
        let body = f.serve("/patient.bin", size: 2_500_000)
        let run = try f.start()
        let id = try await run.manager.add(try f.request("/patient.bin"))
        #expect(await run.waitForTerminal([id], timeout: .seconds(40)))
        #expect(run.events.terminal(id).map(\.caseName) == ["completed"])
        #expect(sha256(file: f.path("patient.bin")) == sha256(body))
        await run.stop()
    }

    @Test func aSlowDownloadReadsInSmallPiecesAndNeverHitsTheIdleTimeout() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        // Under `HTTPClientPool.slowRate` the socket is read 8 KiB at a time: the read-ahead drains
        // in well under the 1 s idle timeout. With 256 KiB reads it took seconds, and this download
        // needed several requests.
        f.configuration.timeouts.idle = .seconds(1)
        f.configuration.limits.perDownloadBytesPerSecond = 192 << 10
        let body = f.serve("/slow.bin", size: 1_310_720)
        let run = try f.start()
        let id = try await run.manager.add(try f.request("/slow.bin"))
        #expect(await run.waitForTerminal([id], timeout: .seconds(40)))
        #expect(run.events.terminal(id).map(\.caseName) == ["completed"])
        #expect(sha256(file: f.path("slow.bin")) == sha256(body))
        #expect(f.server.requests(to: "/slow.bin").count == 1)
        await run.stop()
    }

    @Test func badLimitsAreErrorsAndUnknownIdsAreNotFound() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.limits.perDownloadBytesPerSecond = 0
        #expect(throws: SwoopError.self) { try DownloadManager(configuration: f.configuration) }
        f.configuration.limits.perDownloadBytesPerSecond = nil
        let run = try f.start()
        var request = try f.request("/x.bin")
        request.bytesPerSecond = -1
        let named = await #expect(throws: SwoopError.self) { try await run.manager.add(request) }
        #expect(named?.message == "\(request.url.absoluteString): a rate limit must be 0 (none) or more (got -1)")
        #expect(try await run.manager.downloads().isEmpty)
        let unknown = await #expect(throws: SwoopError.self) { try await run.manager.setRateLimit(.make(), bytesPerSecond: 1000) }
        #expect(unknown?.code == .notFound)
        await #expect(throws: SwoopError.self) { try await run.manager.setOverallRateLimit(-1) }
        await #expect(throws: SwoopError.self) { try await run.manager.setDefaultRateLimit(0) }
        await run.stop()
    }
}
