import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

/// The manager's queue, controls, reconciliation and shutdown against the real test server.
///
/// Serialized: the limits are measured at the server in wall-clock intervals, and one test counts
/// this process's file descriptors; on two cores, parallel tests would blur both.
@Suite("DownloadManager: queue, controls, reconcile, shutdown", .serialized, .timeLimit(.minutes(1)))
struct DownloadManagerTests {
    // MARK: - Queue limits and order

    /// A queued download opens where its transfer runs (nothing to save); a directory that went
    /// away meanwhile still fails it with the one clear error, as the disk-thread open did.
    @Test func aQueuedDownloadWhoseDirectoryWentAwayFailsNamingIt() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        f.serve("/gone.bin", size: 1_000)
        let sub = f.directory + "/sub"
        try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: false)
        let store = InMemoryDownloadStore()
        let manager = try DownloadManager(configuration: f.configuration, store: store)
        let events = ManagerEventLog(manager.events())
        let ids = try await manager.add(contentsOf: [DownloadRequest(url: f.server.url("/gone.bin"), directory: sub)])
        try FileManager.default.removeItem(atPath: sub)
        let run = ManagerRun(manager: manager, store: store, events: events, runner: Task { await manager.run() })
        defer { Task { await run.stop() } }
        #expect(await run.waitForTerminal(ids))
        guard case .failed(_, let error) = events.terminal(ids[0]).first else {
            Issue.record("not failed: \(events.terminal(ids[0]))")
            return
        }
        #expect(error.message == "cannot use directory \(sub): No such file or directory")
        #expect(f.server.requests(to: "/gone.bin").isEmpty)
    }

    @Test func queueRunsAtMostTheLimitAtOnceAndFinishesEverything() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.queue.maxConcurrentDownloads = 3
        var bodies: [[UInt8]] = []
        for i in 0..<12 {
            bodies.append(f.serve("/f\(i).bin", size: 64_000, seed: UInt64(i)))
            f.server.setDefault("/f\(i).bin", .throttle(bytesPerSecond: 320_000))
        }
        let run = try f.start()
        let ids = try await run.manager.add(contentsOf: (0..<12).map { try f.request("/f\($0).bin") })
        #expect(Set(ids).count == 12)
        #expect(await run.waitForTerminal(ids))
        #expect(f.server.maxConcurrentResponses == 3)
        for i in 0..<12 {
            #expect(sha256(file: f.path("f\(i).bin")) == sha256(bodies[i]))
        }
        for id in ids {
            #expect(run.events.terminal(id).map(\.caseName) == ["completed"])
        }
        #expect(f.server.requests.count == 12)
        await run.stop()
    }

    @Test func perHostLimitHoldsOnEachHostAndTheTotalLimitAcrossThem() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        let other = try await TestServer.start(host: "127.0.0.2")
        defer { Task { try? await other.shutdown() } }
        f.configuration.queue.maxConcurrentDownloads = 4
        f.configuration.queue.maxPerHost = 2
        var requests: [DownloadRequest] = []
        var expected: [String: [UInt8]] = [:]
        for i in 0..<6 {
            for (server, tag) in [(f.server, "a"), (other, "b")] {
                let name = "\(tag)\(i).bin"
                expected[name] = f.serve("/" + name, size: 48_000, seed: UInt64(i), on: server)
                server.setDefault("/" + name, .throttle(bytesPerSecond: 320_000))
                requests.append(try f.request("/" + name, on: server))
            }
        }
        let run = try f.start()
        let ids = try await run.manager.add(contentsOf: requests)
        #expect(await run.waitForTerminal(ids))
        #expect(f.server.maxConcurrentResponses == 2)
        #expect(other.maxConcurrentResponses == 2)
        #expect(TestServer.maxOverlap(f.server.responseIntervals + other.responseIntervals) <= 4)
        for (name, body) in expected {
            #expect(sha256(file: f.path(name)) == sha256(body), "\(name)")
        }
        await run.stop()
    }

    @Test func priorityAndMoveDecideWhatStartsNext() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.queue.maxConcurrentDownloads = 1
        f.serve("/a.bin", size: 400_000)
        f.server.setDefault("/a.bin", .throttle(bytesPerSecond: 400_000))
        for name in ["b", "c"] { f.serve("/\(name).bin", size: 10_000) }
        let run = try f.start()
        let a = try await run.manager.add(f.request("/a.bin"))
        let b = try await run.manager.add(f.request("/b.bin"))
        let c = try await run.manager.add(f.request("/c.bin"))
        #expect(await eventually { f.server.requests.count == 1 })
        try await run.manager.setPriority(c, 10)
        try await run.manager.move(b, to: 0)
        // A takes about a second: the reordering happened while it ran.
        #expect(f.server.requests.map(\.path) == ["/a.bin"])
        #expect(await run.manager.stats().waiting == 2)
        #expect(await run.waitForTerminal([a, b, c]))
        // B was moved in front of C, so it took C's priority (a lower one would put it behind C).
        #expect(f.server.requests.map(\.path) == ["/a.bin", "/b.bin", "/c.bin"])
        let storedB = try #require(try run.store.record(id: b))
        let storedC = try #require(try run.store.record(id: c))
        #expect(storedB.priority == 10 && storedC.priority == 10)
        #expect(storedB.position < storedC.position)
        #expect(try await run.manager.download(id: c).priority == 10)
        // Neither is waiting any more.
        await #expect(throws: SwoopError.self) { try await run.manager.setPriority(c, 1) }
        await #expect(throws: SwoopError.self) { try await run.manager.move(b, to: 1) }
        await run.stop()
    }

    @Test func raisingTheLimitWhileRunningStartsMoreAtOnce() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.queue.maxConcurrentDownloads = 1
        for i in 0..<4 {
            f.serveStalling("/s\(i).bin", size: 100_000, after: 1_000, every: true, seed: UInt64(i))
        }
        let run = try f.start()
        _ = try await run.manager.add(contentsOf: (0..<4).map { try f.request("/s\($0).bin") })
        #expect(await eventually { f.server.openResponses == 1 })
        #expect(await run.manager.stats().waiting == 3)
        try await run.manager.setMaxConcurrentDownloads(3)
        #expect(await eventually { f.server.openResponses == 3 })
        #expect(await run.manager.stats().active == 3)
        #expect(await run.manager.stats().maxConcurrentDownloads == 3)
        #expect(f.server.requests.count == 3)
        await #expect(throws: SwoopError.self) { try await run.manager.setMaxConcurrentDownloads(0) }
        await #expect(throws: SwoopError.self) { try await run.manager.setMaxPerHost(0) }
        await run.stop()
    }

    // MARK: - Pause, resume, cancel, remove

    @Test func pausingARunningDownloadSavesItsProgressAndResumeContinuesWithARange() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let body = f.serveStalling("/p.bin", size: 2_000_000, after: 1_200_000)
        let run = try f.start()
        let id = try await run.manager.add(f.request("/p.bin"))
        #expect(await f.partFileReaches("p.bin", size: 1_200_000))
        try await run.manager.pause(id)
        let saved = try #require(try run.store.record(id: id))
        #expect(saved.state == .paused)
        #expect(saved.committedBytes == 1_200_000)
        #expect(try await run.manager.download(id: id).state == .paused)
        #expect(await run.manager.stats().active == 0)
        #expect(await run.events.wait { $0.contains { $0.download.id == id && $0.caseName == "paused" } })
        await #expect { try await run.manager.pause(id) } throws: {
            ($0 as? SwoopError)?.message == "the download is already paused"
        }

        try await run.manager.resume(id)
        #expect(await run.events.wait { _ in run.events.terminal(id).count == 2 })
        let failures = run.events.terminal(id).compactMap { event -> String? in if case .failed(_, let error) = event { error.message } else { nil } }
        #expect(run.events.terminal(id).map(\.caseName) == ["paused", "completed"], "\(failures)")
        #expect(sha256(file: f.path("p.bin")) == sha256(body))
        let resumed = try #require(f.server.requests(to: "/p.bin").last)
        #expect(resumed.header("Range") == "bytes=1200000-")
        #expect(resumed.header("If-Range") == "\"v1\"")
        #expect(f.server.bodyBytesSent(to: "/p.bin") == body.count)
        await run.stop()
    }

    @Test func aPausedWaitingDownloadNeverStartsUntilResumed() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.queue.maxConcurrentDownloads = 1
        let bodyA = f.serveStalling("/a.bin", size: 300_000, after: 100_000, seed: 1)
        let bodyB = f.serve("/b.bin", size: 50_000, seed: 2)
        let run = try f.start()
        let a = try await run.manager.add(f.request("/a.bin"))
        let b = try await run.manager.add(f.request("/b.bin"))
        #expect(await f.partFileReaches("a.bin", size: 100_000))
        #expect(await run.manager.stats().waiting == 1)
        try await run.manager.pause(b)
        #expect(try run.store.record(id: b)?.state == .paused)
        #expect(await run.manager.stats().waiting == 0)
        // With A paused too, nothing is left to run: B must not slip into the free slot.
        try await run.manager.pause(a)
        await run.manager.waitUntilIdle()
        #expect(f.server.requests(to: "/b.bin").isEmpty)
        #expect(run.events.terminal(b).map(\.caseName) == ["paused"])

        try await run.manager.resume(b)
        try await run.manager.resume(a)
        #expect(await run.events.wait { _ in run.events.terminal(a).count == 2 && run.events.terminal(b).count == 2 })
        #expect(run.events.terminal(a).map(\.caseName) == ["paused", "completed"])
        #expect(run.events.terminal(b).map(\.caseName) == ["paused", "completed"])
        #expect(sha256(file: f.path("a.bin")) == sha256(bodyA))
        #expect(sha256(file: f.path("b.bin")) == sha256(bodyB))
        #expect(f.server.requests(to: "/b.bin").count == 1)
        #expect(f.server.requests(to: "/a.bin").last?.header("Range") == "bytes=100000-")
        await run.stop()
    }

    @Test func pauseAllStopsEverythingWithoutStartingTheWaitingAndResumeAllFinishesThem() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.queue.maxConcurrentDownloads = 2
        var bodies: [[UInt8]] = []
        for i in 0..<4 {
            bodies.append(f.serve("/q\(i).bin", size: 200_000, seed: UInt64(i)))
        }
        for i in 0..<2 { f.server.enqueue("/q\(i).bin", .stallAfter(bytes: 50_000)) }
        let run = try f.start()
        let ids = try await run.manager.add(contentsOf: (0..<4).map { try f.request("/q\($0).bin") })
        #expect(await f.partFileReaches("q0.bin", size: 50_000))
        #expect(await f.partFileReaches("q1.bin", size: 50_000))
        await run.manager.pauseAll()
        await run.manager.waitUntilIdle()
        // Pausing the running ones must not hand their slots to the waiting ones.
        #expect(f.server.requests.count == 2)
        #expect(try run.store.all().allSatisfy { $0.state == .paused })
        #expect(await run.events.wait { _ in ids.allSatisfy { run.events.terminal($0).map(\.caseName) == ["paused"] } })

        let resumed = try await run.manager.resumeAll()
        #expect(Set(resumed) == Set(ids))
        #expect(await run.events.wait { _ in ids.allSatisfy { run.events.terminal($0).count == 2 } })
        let failures = ids.flatMap { id in run.events.terminal(id).compactMap { event -> String? in if case .failed(_, let error) = event { error.message } else { nil } } }
        for i in 0..<4 {
            #expect(sha256(file: f.path("q\(i).bin")) == sha256(bodies[i]), "\(failures)")
        }
        #expect(f.server.requests(to: "/q0.bin").last?.header("Range") == "bytes=50000-")
        #expect(try await run.manager.resumeAll().isEmpty)
        await run.stop()
    }

    @Test func illegalRequestsAreClearErrors() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        f.serve("/done.bin", size: 1_000)
        let run = try f.start()
        let id = try await run.manager.add(f.request("/done.bin"))
        #expect(await run.waitForTerminal([id]))
        await run.manager.waitUntilIdle()
        await #expect { try await run.manager.resume(id) } throws: { error in
            let error = error as? SwoopError
            return error?.code == .invalidArgument && error?.message == "the download is already complete"
        }
        await #expect { try await run.manager.pause(id) } throws: {
            ($0 as? SwoopError)?.message == "a completed download cannot be paused"
        }
        let unknown = Download.ID("no-such-download")
        let isNotFound: @Sendable (any Error) -> Bool = { ($0 as? SwoopError)?.code == .notFound }
        await #expect(performing: { try await run.manager.pause(unknown) }, throws: isNotFound)
        await #expect(performing: { try await run.manager.resume(unknown) }, throws: isNotFound)
        await #expect(performing: { try await run.manager.cancel(unknown) }, throws: isNotFound)
        await #expect(performing: { try await run.manager.remove(unknown) }, throws: isNotFound)
        await #expect(performing: { try await run.manager.download(id: unknown) }, throws: isNotFound)
        await run.stop()
    }

    @Test func cancelDeletesThePartFileAndMarksTheRecordRemoved() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        f.serveStalling("/c.bin", size: 1_000_000, after: 400_000)
        let run = try f.start()
        let id = try await run.manager.add(f.request("/c.bin"))
        #expect(await f.partFileReaches("c.bin", size: 400_000))
        try await run.manager.cancel(id)
        #expect(!FileManager.default.fileExists(atPath: f.path("c.bin.swoop")))
        #expect(try run.store.record(id: id)?.state == .removed)
        #expect(await run.events.wait { _ in !run.events.terminal(id).isEmpty })
        await run.manager.waitUntilIdle()
        // A cancel is one `removed`, not a `paused` as well.
        #expect(run.events.terminal(id).map(\.caseName) == ["removed"])
        #expect(f.files().isEmpty)
        await run.stop()
    }

    @Test func stoppingADownloadTheQueueJustStartedGivesOneTerminalEvent() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        for name in ["warm", "p", "c", "r"] { f.serve("/\(name).bin", size: 100_000) }
        let run = try f.start()
        // Once a first download has run, `run()` is running and takes new ones at once.
        let warm = try await run.manager.add(f.request("/warm.bin"))
        #expect(await run.waitForTerminal([warm]))
        await run.manager.waitUntilIdle()
        // Each is handed to `run()` at once; the stop lands before (or as) its transfer begins.
        let p = try await run.manager.add(f.request("/p.bin"))
        try await run.manager.pause(p)
        let c = try await run.manager.add(f.request("/c.bin"))
        try await run.manager.cancel(c)
        let r = try await run.manager.add(f.request("/r.bin"))
        try await run.manager.remove(r)
        await run.manager.waitUntilIdle()
        #expect(await run.events.wait { _ in [p, c, r].allSatisfy { !run.events.terminal($0).isEmpty } })
        await run.stop()
        #expect(run.events.terminal(p).map(\.caseName) == ["paused"])
        #expect(run.events.terminal(c).map(\.caseName) == ["removed"])
        #expect(run.events.terminal(r).map(\.caseName) == ["removed"])
        #expect(try run.store.record(id: p)?.state == .paused)
        #expect(try run.store.record(id: c)?.state == .removed)
        #expect(try run.store.record(id: r) == nil)
        #expect(!f.files().contains { $0.hasSuffix(".swoop") })
        #expect(await run.manager.stats().stopped == 3)
        #expect(await run.manager.stats().completed == 1)
    }

    @Test(arguments: [true, false])
    func removeForgetsACompletedDownloadAndDeletesItsFileOnlyWhenAsked(deletingFile: Bool) async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let body = f.serve("/r.bin", size: 20_000)
        let run = try f.start()
        let id = try await run.manager.add(f.request("/r.bin"))
        #expect(await run.waitForTerminal([id]))
        await run.manager.waitUntilIdle()
        try await run.manager.remove(id, deletingFile: deletingFile)
        #expect(try run.store.record(id: id) == nil)
        #expect(try await run.manager.downloads().isEmpty)
        #expect(await run.events.wait { _ in run.events.terminal(id).count == 2 })
        #expect(run.events.terminal(id).map(\.caseName) == ["completed", "removed"])
        if deletingFile {
            #expect(f.files().isEmpty)
        } else {
            #expect(sha256(file: f.path("r.bin")) == sha256(body))
        }
        await run.stop()
    }

    // MARK: - Adding again

    @Test func addingTheSameURLAgainReusesTheRecordAndRecognisesACompletedFile() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let body = f.serve("/same.bin", size: 200_000)
        f.server.setDefault("/same.bin", .throttle(bytesPerSecond: 1_000_000))
        let run = try f.start()
        let request = try f.request("/same.bin")
        let first = try await run.manager.add(request)
        // While it is queued or running, and twice in one batch.
        #expect(try await run.manager.add(request) == first)
        #expect(try await run.manager.add(contentsOf: [request, request]) == [first, first])
        #expect(try run.store.all().count == 1)
        #expect(await run.waitForTerminal([first]))
        await run.manager.waitUntilIdle()
        #expect(sha256(file: f.path("same.bin")) == sha256(body))

        let again = try await run.manager.add(request)
        #expect(again == first)
        #expect(await run.events.wait { _ in run.events.terminal(first).count == 2 })
        #expect(run.events.terminal(first).map(\.caseName) == ["completed", "alreadyComplete"])
        #expect(f.server.requests(to: "/same.bin").count == 1)
        #expect(try run.store.all().count == 1)
        #expect(try run.store.record(id: first)?.state == .completed)
        await run.stop()
    }

    // MARK: - Reconciling

    @Test func reconcileRecoversDeadActiveRecordsAndReportsChangedAndOrphanedFiles() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let store = InMemoryDownloadStore()
        var dead = f.record("/dead.bin")
        dead.state = .active
        dead.fileName = "dead.bin"
        dead.committedBytes = 10
        try store.save(dead)
        try Data(count: 10).write(to: URL(fileURLWithPath: f.path("dead.bin.swoop")))
        // Another live process holds this one's lock: it is not ours to recover.
        var busy = f.record("/busy.bin")
        busy.state = .active
        try store.save(busy)
        let lock = try DownloadLock.acquire(busy.key, in: f.lockDirectory)
        var gone = f.record("/gone.bin")
        gone.state = .completed
        gone.fileName = "gone.bin"
        gone.finalSize = 10
        try store.save(gone)
        try Data(count: 3).write(to: URL(fileURLWithPath: f.path("x.bin.swoop")))

        let manager = try DownloadManager(configuration: f.configuration, store: store)
        let report = try await manager.reconcile()
        withExtendedLifetime(lock) {}
        #expect(report.recovered == [dead.id])
        #expect(try store.record(id: dead.id)?.state == .waiting)
        #expect(try store.record(id: busy.id)?.state == .active)
        #expect(report.changedFiles == [gone.id])
        let goneNow = try await manager.download(id: gone.id)
        #expect(goneNow.error == "\(f.path("gone.bin")) was removed")
        #expect(report.orphanedPartFiles == [f.path("x.bin.swoop")])
        #expect(FileManager.default.fileExists(atPath: f.path("x.bin.swoop")))
        #expect(FileManager.default.fileExists(atPath: f.path("dead.bin.swoop")))
        #expect(report.forgotten == 0)
        try await manager.shutdown()
    }

    @Test func reconcileForgetsTheOldestFinishedRecordsBeyondTheHistoryLimit() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.history.maxFinished = 2
        let store = InMemoryDownloadStore()
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        var finished: [DownloadRecord] = []
        for i in 0..<4 {
            var record = f.record("/h\(i).bin")
            record.state = i == 3 ? .removed : .completed
            record.updatedAt = start.addingTimeInterval(Double(i))
            finished.append(record)
        }
        var paused = f.record("/old.bin")
        paused.state = .paused
        paused.updatedAt = start.addingTimeInterval(-100)
        try store.save(contentsOf: finished + [paused])
        let manager = try DownloadManager(configuration: f.configuration, store: store)
        let report = try await manager.reconcile()
        #expect(report.forgotten == 2)
        #expect(Set(try store.all().map(\.id)) == [finished[2].id, finished[3].id, paused.id])
        try await manager.shutdown()
    }

    // MARK: - Shutdown and resources

    @Test func shutdownPausesStalledTransfersClosesConnectionsAndEndsEverything() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.queue.maxConcurrentDownloads = 3
        for i in 0..<3 {
            f.serveStalling("/s\(i).bin", size: 1_000_000, after: 300_000, every: true, seed: UInt64(i))
        }
        let run = try f.start()
        let ids = try await run.manager.add(contentsOf: (0..<3).map { try f.request("/s\($0).bin") })
        for i in 0..<3 {
            #expect(await f.partFileReaches("s\(i).bin", size: 300_000))
        }
        #expect(f.server.openConnections == 3)
        let began = ContinuousClock.now
        try await run.manager.shutdown()
        #expect(ContinuousClock.now - began < .seconds(10))
        for id in ids {
            let record = try #require(try run.store.record(id: id))
            #expect(record.state == .interrupted)
            #expect(record.committedBytes == 300_000)
        }
        #expect(await eventually { f.server.openConnections == 0 })
        #expect(await eventually { run.events.ended })
        for id in ids {
            #expect(run.events.terminal(id).map(\.caseName) == ["paused"])
        }
        // run() has returned.
        await run.runner.value
        await #expect(throws: SwoopError.self) { try await run.manager.add(f.request("/s0.bin")) }
        await #expect(throws: SwoopError.self) { try await run.manager.download(f.request("/s0.bin")) }
        // A second shutdown is harmless.
        try await run.manager.shutdown()
    }

    /// Cancelling `run()`'s task stops the transfers like shutdown does, and leaves nothing stuck:
    /// no download counts as active, and pausing a waiting one returns.
    @Test func cancellingRunLeavesNoDownloadStuck() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.queue.maxConcurrentDownloads = 2
        for i in 0..<5 {
            f.serveStalling("/c\(i).bin", size: 1_000_000, after: 200_000, every: true, seed: UInt64(i))
        }
        let run = try f.start()
        let ids = try await run.manager.add(contentsOf: (0..<5).map { try f.request("/c\($0).bin") })
        #expect(await f.partFileReaches("c0.bin", size: 200_000))
        #expect(await f.partFileReaches("c1.bin", size: 200_000))
        run.runner.cancel()
        await run.runner.value
        let stats = await run.manager.stats()
        #expect(stats.active == 0)
        #expect(await run.manager.isRunning == false)
        try await run.manager.pause(ids[4])
        #expect(try run.store.record(id: ids[0])?.state == .interrupted)
        #expect(try run.store.record(id: ids[0])?.committedBytes == 200_000)
        #expect(try run.store.record(id: ids[4])?.state == .paused)
        #expect(try run.store.record(id: ids[3])?.state == .waiting)
        try await run.manager.shutdown()
        #expect(await eventually { f.server.openConnections == 0 })
    }

    /// Two shutdowns at once (Ctrl-C beside the normal end): the second returns only when the first
    /// has finished, so neither returns while transfers are still settling.
    @Test func concurrentShutdownsBothWaitForTheEnd() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.queue.maxConcurrentDownloads = 3
        for i in 0..<3 {
            f.serveStalling("/d\(i).bin", size: 1_000_000, after: 100_000, every: true, seed: UInt64(i))
        }
        let run = try f.start()
        let ids = try await run.manager.add(contentsOf: (0..<3).map { try f.request("/d\($0).bin") })
        for i in 0..<3 { #expect(await f.partFileReaches("d\(i).bin", size: 100_000)) }
        let manager = run.manager
        let first = Task { try await manager.shutdown() }
        let second = Task { try await manager.shutdown() }
        try await second.value
        // Whichever returned, everything is settled already.
        for id in ids {
            #expect(try run.store.record(id: id)?.state == .interrupted)
        }
        #expect(await eventually { run.events.ended })
        try await first.value
        await run.runner.value
    }

    /// A waiting download whose record another process deleted (`swoop rm`) ends with `removed`
    /// when its turn comes, so nobody waits for it forever.
    @Test func aRecordDeletedElsewhereWhileWaitingEndsAsRemoved() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.queue.maxConcurrentDownloads = 1
        f.serve("/first.bin", size: 400_000)
        f.server.setDefault("/first.bin", .throttle(bytesPerSecond: 1_000_000))
        f.serve("/second.bin", size: 1_000)
        let run = try f.start()
        let ids = try await run.manager.add(contentsOf: [try f.request("/first.bin"), try f.request("/second.bin")])
        try run.store.delete(id: ids[1])
        #expect(await run.waitForTerminal(ids))
        #expect(run.events.terminal(ids[0]).map(\.caseName) == ["completed"])
        #expect(run.events.terminal(ids[1]).map(\.caseName) == ["removed"])
        #expect(f.server.requests(to: "/second.bin").isEmpty)
        await run.manager.waitUntilIdle()
        await run.stop()
    }

    /// A download another process paused after this one queued it is skipped, even when the pause
    /// lands after the queue's own check (the transfer re-reads the record under the lock).
    @Test func aQueuedTransferLeavesARecordPausedElsewhereAlone() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        f.serve("/late.bin", size: 1_000)
        var configuration = f.configuration
        configuration.queue.maxConcurrentDownloads = 1
        let store = InMemoryDownloadStore()
        let manager = try DownloadManager(configuration: configuration, store: store)
        let events = ManagerEventLog(manager.events())
        // Queued before run() starts, then paused in the store as another process would.
        let id = try await manager.add(f.request("/late.bin"))
        var record = try #require(try store.record(id: id))
        record.state = .paused
        try store.save(record)
        let runner = Task { await manager.run() }
        #expect(await events.wait { $0.contains { $0.isTerminal && $0.download.id == id } })
        #expect(events.terminal(id).map(\.caseName) == ["paused"])
        #expect(f.server.requests(to: "/late.bin").isEmpty)
        #expect(try store.record(id: id)?.state == .paused)
        try await manager.shutdown()
        await runner.value
    }

    @Test func waitingDownloadsHoldNoFilesOrConnections() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.queue.maxConcurrentDownloads = 1
        f.serveStalling("/first.bin", size: 100_000, after: 10_000, every: true)
        for i in 0..<299 { f.serve("/w\(i).bin", size: 100, seed: UInt64(i)) }
        let run = try f.start()
        _ = try await run.manager.add(f.request("/first.bin"))
        #expect(await f.partFileReaches("first.bin", size: 10_000))
        let root = (f.directory as NSString).deletingLastPathComponent
        let before = openFileDescriptorCount()
        let filesBefore = openFileDescriptors(under: root)
        _ = try await run.manager.add(contentsOf: (0..<299).map { try f.request("/w\($0).bin") })
        #expect(await run.manager.stats().waiting == 299)
        #expect(openFileDescriptorCount() - before < 10)
        #expect(openFileDescriptors(under: root) == filesBefore)
        #expect(f.server.connectionsAccepted == 1)
        #expect(f.server.requests.count == 1)
        await run.stop()
        // Shutdown leaves them waiting in the store, untouched.
        #expect(try run.store.all().filter { $0.state == .waiting }.count == 299)
    }

    @Test func ephemeralManagerWritesNothingButTheFile() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.lockDirectory = f.lockDirectory
        let body = f.serve("/e.bin", size: 300_000)
        let manager = try DownloadManager.ephemeral(configuration: f.configuration)
        #expect(manager.configuration.lockDirectory == nil)
        let events = ManagerEventLog(manager.events())
        let runner = Task { await manager.run() }
        let id = try await manager.add(f.request("/e.bin"))
        #expect(await events.wait { _ in !events.terminal(id).isEmpty })
        try await manager.shutdown()
        await runner.value
        #expect(events.terminal(id).map(\.caseName) == ["completed"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: f.lockDirectory).isEmpty)
        #expect(f.files() == ["e.bin"])
        #expect(sha256(file: f.path("e.bin")) == sha256(body))
    }

    // MARK: - Events and stats

    @Test func aSubscriberThatDoesNotReadGetsCoalescedProgressAndEveryStateChange() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let body = f.serve("/big.bin", size: 4 << 20)
        f.server.setDefault("/big.bin", .throttle(bytesPerSecond: 4 << 20))
        let manager = try DownloadManager(configuration: f.configuration, store: InMemoryDownloadStore())
        let slow = manager.events()
        let fast = ManagerEventLog(manager.events())
        let runner = Task { await manager.run() }
        let id = try await manager.add(f.request("/big.bin"))
        #expect(await fast.wait { _ in !fast.terminal(id).isEmpty })
        await manager.waitUntilIdle()
        try await manager.shutdown()
        await runner.value
        #expect(sha256(file: f.path("big.bin")) == sha256(body))

        var received: [DownloadEvent] = []
        for await event in slow { received.append(event) }
        let names = received.map(\.caseName)
        let progress = names.filter { $0 == "progress" }.count
        // The reading subscriber saw many progress events; the idle one only the latest of each run.
        #expect(fast.all.filter { $0.caseName == "progress" }.count >= 5)
        #expect(progress <= 2)
        #expect(names.first == "added")
        #expect(names.filter { $0 == "added" }.count == 1)
        #expect(names.filter { $0 == "completed" }.count == 1)
        #expect(names.last == "completed")
        let started = try #require(names.firstIndex(of: "started"))
        #expect(names.firstIndex(of: "progress").map { $0 > started } ?? true)
        #expect(received.last?.download.completedBytes == body.count)
    }

    @Test func statsCountActiveAndWaitingWhileRunningAndOutcomesAfter() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.queue.maxConcurrentDownloads = 2
        for i in 0..<4 {
            f.serve("/ok\(i).bin", size: 100_000, seed: UInt64(i))
            f.server.setDefault("/ok\(i).bin", .throttle(bytesPerSecond: 500_000))
        }
        f.server.setDefault("/missing.bin", .status(404))
        let run = try f.start()
        let requests = try (0..<4).map { try f.request("/ok\($0).bin") } + [f.request("/missing.bin")]
        let ids = try await run.manager.add(contentsOf: requests)
        // `run()` starts in its own task: wait until it has taken the first two.
        #expect(await eventuallyAsync { await run.manager.stats().active == 2 })
        let running = await run.manager.stats()
        #expect(running.active == 2)
        #expect(running.waiting == 3)
        #expect(running.maxConcurrentDownloads == 2)
        #expect(await run.waitForTerminal(ids))
        await run.manager.waitUntilIdle()
        let after = await run.manager.stats()
        #expect(after.active == 0 && after.waiting == 0)
        #expect(after.completed == 4)
        #expect(after.failed == 1)
        #expect(after.stopped == 0)
        #expect(try await run.manager.downloads(matching: [.completed]).count == 4)
        let failed = try await run.manager.downloads(matching: [.failed])
        #expect(failed.map(\.id) == [ids[4]])
        #expect(failed.first?.error?.contains("HTTP 404") == true)
        await run.stop()
    }
}
