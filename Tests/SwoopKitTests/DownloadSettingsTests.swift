import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

/// A download's own settings: laid over what is stored, applied over the manager's configuration,
/// checked, and used by the transfers (issue 10, point 2).
@Suite("Download settings")
struct DownloadSettingsTests {
    static func every() -> DownloadSettings {
        var settings = DownloadSettings()
        settings.maxConnections = 4
        settings.minSplitSize = 1 << 20
        settings.bytesPerSecond = 0
        settings.maxRetries = 2
        settings.retryWait = 0.25
        settings.connectTimeout = 3
        settings.idleTimeout = 7.5
        settings.proxy = "http://proxy:3128"
        settings.noProxy = "example.com"
        settings.useProxyEnvironment = false
        return settings
    }

    @Test func newerSettingsReplaceOnlyWhatTheySet() {
        let stored = Self.every()
        #expect(stored.overriding(with: DownloadSettings()) == stored)
        #expect(DownloadSettings().overriding(with: stored) == stored)
        var newer = DownloadSettings()
        newer.maxConnections = 1
        newer.proxy = ""
        var expected = stored
        expected.maxConnections = 1
        expected.proxy = ""
        #expect(stored.overriding(with: newer) == expected)
        #expect(DownloadSettings().isEmpty && !newer.isEmpty)
    }

    @Test func appliedSettingsReplaceTheConfigurationsAndNothingElse() {
        let base = Configuration()
        let none = DownloadSettings().applied(to: base)
        #expect(none.segments == base.segments && none.retry == base.retry && none.timeouts == base.timeouts && none.proxy == base.proxy)
        let applied = Self.every().applied(to: base)
        #expect(applied.segments.maxConnections == 4)
        #expect(applied.segments.minSplitSize == 1 << 20)
        #expect(applied.retry.maxRetries == 2)
        #expect(applied.retry.baseDelay == .milliseconds(250))
        #expect(applied.timeouts.connect == .seconds(3))
        #expect(applied.timeouts.idle == .milliseconds(7500))
        #expect(applied.proxy.url == "http://proxy:3128")
        #expect(applied.proxy.noProxy == "example.com")
        #expect(applied.proxy.useEnvironment == false)
        #expect(applied.retry.maxDelay == base.retry.maxDelay)
        #expect(applied.queue == base.queue)
    }

    @Test func theOwnRateTellsNoLimitFromTheDefault() {
        var settings = DownloadSettings()
        #expect(settings.ownRate == nil)
        settings.bytesPerSecond = 0
        #expect(settings.ownRate == .some(nil))
        settings.bytesPerSecond = 500
        #expect(settings.ownRate == .some(500))
    }

    @Test func outOfRangeSettingsAreRefusedByName() {
        let cases: [(WritableKeyPath<DownloadSettings, Int?>, Int, String)] = [
            (\.maxConnections, 0, "connections must be between 1 and 64 (got 0)"),
            (\.maxConnections, 65, "connections must be between 1 and 64 (got 65)"),
            (\.minSplitSize, 1000, "the smallest segment must be at least 1 KiB (got 1000 bytes)"),
            (\.maxRetries, 1001, "retries must be between 0 and 1000 (got 1001)"),
            (\.bytesPerSecond, -1, "a rate limit must be 0 (none) or more (got -1)"),
        ]
        for (path, value, message) in cases {
            var settings = DownloadSettings()
            settings[keyPath: path] = value
            let error = #expect(throws: SwoopError.self) { try settings.validate() }
            #expect(error?.message == message)
            #expect(error?.code == .invalidArgument)
        }
    }

    @Test func timeoutsMustBePositive() throws {
        var settings = DownloadSettings()
        settings.idleTimeout = 0
        let error = #expect(throws: SwoopError.self) { try settings.validate() }
        #expect(error?.message == "the idle timeout must be more than 0 and at most 1000000 seconds (got 0.0)")
        try Self.every().validate()
    }

    /// A request for a known download adds its headers (replacing stored ones of the same name),
    /// and replaces the checksum, policy and settings it names; what it leaves out stays.
    @Test func aRequestIsLaidOverTheStoredRecord() throws {
        var stored = try DownloadRecord(DownloadRequest(url: "http://127.0.0.1/a", directory: "/tmp"), bootID: "b")
        stored.headers = [HTTPHeaderField(name: "X-Token", value: "old"), HTTPHeaderField(name: "X-Keep", value: "yes")]
        stored.checksum = "md5=00"
        stored.collisionPolicy = .overwrite
        stored.settings = Self.every()

        var rerun = stored
        rerun.apply(try DownloadRequest(url: "http://127.0.0.1/a", directory: "/tmp"))
        #expect(rerun == stored)

        var request = try DownloadRequest(url: "http://127.0.0.1/a", directory: "/tmp")
        // A header with no value removes the stored one (curl's `-H 'Name:'`).
        request.headers = [("x-token", "new"), ("X-Keep", "")]
        request.checksum = try Checksum(parsing: "md5=" + String(repeating: "1", count: 32))
        request.collisionPolicy = .fail
        request.settings.maxConnections = 2
        var changed = stored
        changed.apply(request)
        #expect(changed.headers == [HTTPHeaderField(name: "x-token", value: "new")])
        #expect(changed.checksum == "md5=" + String(repeating: "1", count: 32))
        #expect(changed.collisionPolicy == .fail)
        #expect(changed.settings.maxConnections == 2)
        #expect(changed.settings.maxRetries == 2)
        // The record's request carries the settings, for a run of it elsewhere.
        #expect(try changed.request().settings == changed.settings)

        // A completed download keeps no `overwrite` for a request that names no policy (its file
        // may be the user's by now); one that names it gets it.
        var completed = stored
        completed.state = .completed
        completed.apply(try DownloadRequest(url: "http://127.0.0.1/a", directory: "/tmp"))
        #expect(completed.collisionPolicy == .rename)
        request.collisionPolicy = .overwrite
        completed.apply(request)
        #expect(completed.collisionPolicy == .overwrite)

        // Started afresh (removed, or its file changed), it keeps how it was asked for.
        var finished = changed
        (finished.state, finished.committedBytes, finished.etag, finished.fileName) = (.removed, 10, "\"e\"", "a")
        let fresh = finished.restarted(bootID: "b2")
        #expect((fresh.id, fresh.key, fresh.state, fresh.committedBytes, fresh.etag, fresh.fileName) == (changed.id, changed.key, .waiting, 0, nil, nil))
        #expect((fresh.headers, fresh.checksum, fresh.collisionPolicy, fresh.settings) == (changed.headers, changed.checksum, changed.collisionPolicy, changed.settings))
    }

    /// A download stored with no retries fails at its first transient error even though the
    /// manager retries five times: the transfer works with the download's own settings. Re-added
    /// without settings, it keeps them; re-added with `maxRetries` 3, it retries and completes.
    @Test func aTransferUsesTheDownloadsStoredSettings() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let body = f.serve("/r.bin", size: 100_000)
        f.server.enqueue("/r.bin", .status(503))
        f.server.enqueue("/r.bin", .status(503))
        f.server.enqueue("/r.bin", .status(503))
        var configuration = f.configuration
        configuration.retry.maxRetries = 5
        configuration.retry.baseDelay = .milliseconds(10)
        let run = try f.start(configuration: configuration)
        var request = try f.request("/r.bin")
        request.settings.maxRetries = 0
        let id = try await run.manager.add(request)
        #expect(await run.waitForTerminal([id]))
        #expect(try run.store.record(id: id)?.state == .failed)
        #expect(f.server.requests(to: "/r.bin").count == 1)

        // A rerun that names nothing keeps the stored settings: one more request, failed again.
        await run.manager.waitUntilIdle()
        _ = try await run.manager.add(try f.request("/r.bin"))
        #expect(await run.events.wait { $0.filter { $0.isTerminal && $0.download.id == id }.count == 2 })
        #expect(f.server.requests(to: "/r.bin").count == 2)
        #expect(try run.store.record(id: id)?.settings.maxRetries == 0)

        await run.manager.waitUntilIdle()
        var again = try f.request("/r.bin")
        again.settings.maxRetries = 3
        _ = try await run.manager.add(again)
        #expect(await run.events.wait { $0.filter { $0.isTerminal && $0.download.id == id }.count == 3 })
        #expect(try run.store.record(id: id)?.state == .completed)
        #expect(sha256Hex(file: f.path("r.bin")) == sha256Hex(body))
        #expect(try run.store.record(id: id)?.settings.maxRetries == 3)
        await run.stop()
    }

    /// A download's own idle timeout reaches its connection (AsyncHTTPClient sets it per client): a
    /// stalled answer fails after 1 s with no retries although the manager's timeout is 60 s.
    @Test func aDownloadsOwnTimeoutReachesItsConnection() async throws {
        var f = try await ManagerFixture.make()
        defer { f.stop() }
        f.configuration.timeouts.idle = .seconds(60)
        f.serveStalling("/t.bin", size: 100_000, after: 1000)
        let run = try f.start()
        var request = try f.request("/t.bin")
        request.settings.idleTimeout = 1
        request.settings.maxRetries = 0
        let id = try await run.manager.add(request)
        #expect(await run.waitForTerminal([id], timeout: .seconds(30)))
        guard case .failed(_, let error)? = run.events.terminal(id).first else {
            Issue.record("expected a failure, got \(run.events.terminal(id))")
            return
        }
        #expect(error.code == .timeout)
        await run.stop()
    }

    /// One batch (an `-i` list) names a new URL for a file an unfinished download of the list
    /// writes: that download is the list's own, never taken over; both end byte-exact.
    @Test func aListNeverTakesOverADownloadItNamesItself() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let a = f.serve("/a/f.bin", size: 50_000, seed: 1)
        let b = f.serve("/b/f.bin", size: 60_000, seed: 2)
        let store = InMemoryDownloadStore()
        var unfinished = f.record("/a/f.bin")
        (unfinished.fileName, unfinished.state) = ("f.bin", .interrupted)
        try store.save(unfinished)
        let run = try f.start(store: store)
        let ids = try await run.manager.add(contentsOf: [try f.request("/b/f.bin"), try f.request("/a/f.bin")])
        #expect(await run.waitForTerminal(ids))
        #expect(ids[1] == unfinished.id && ids[0] != unfinished.id)
        #expect(Set(try store.all().map(\.url)) == [f.server.url("/a/f.bin"), f.server.url("/b/f.bin")])
        #expect(sha256Hex(file: f.path("f.bin")) == sha256Hex(a))
        #expect(sha256Hex(file: f.path("f.1.bin")) == sha256Hex(b))
        await run.stop()
    }
}
