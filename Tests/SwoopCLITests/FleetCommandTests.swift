import Foundation
import SwoopKit
import SwoopPostgres
import SwoopTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A fleet as a user runs it (issue 15): `swoop daemon --store postgres://… --node NAME` on two
/// "machines" (state and download directories of their own), fed by `swoop add --store`, watched
/// with `swoop ls --store` and `swoop nodes --store`, one daemon killed with SIGKILL.
@Suite("Fleet commands (daemons sharing a PostgreSQL queue)", .enabled(if: TestPhase.runsHeavy))
struct FleetCommandTests {
    /// The store URL without the password (which goes in PGPASSWORD, as a user would keep it).
    struct Fleet {
        let server: PostgresServer
        let database: String
        var url: String { "postgres://\(server.user)@127.0.0.1:\(server.port)/\(database)?sslmode=disable" }
        var environment: [String: String] { ["PGPASSWORD": server.password] }

        init(server: PostgresServer? = nil) async throws {
            if let server { self.server = server } else { self.server = try await PostgresServer.shared() }
            database = try await self.server.makeDatabase("cli")
        }

        func catalogue() throws -> PostgresCatalogue {
            try PostgresCatalogue(PostgresAddress(parsing: server.url(database: database)))
        }

        func run(_ arguments: [String], in directory: String) async throws -> SwoopBinary.Result {
            try await SwoopBinary.run(arguments + ["--store", url], in: directory, environment: environment)
        }

        /// A daemon of the fleet, in its own workspace (a lease of 4 s and two downloads at once unless
        /// `extra` says otherwise: the last value given counts); waits until it says it joined.
        func daemon(_ node: String, extra: [String] = []) async throws -> (running: SwoopBinary.Running, out: String) {
            let (root, out, state) = try SwoopBinary.workspace("swoop-fleet-\(node)")
            let running = try SwoopBinary.Running(
                ["daemon", "--listen", "127.0.0.1:0", "--state-dir", state, "-d", out, "--store", url, "--node", node, "--lease", "4", "-j", "2"] + extra,
                directory: root, environment: environment
            )
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline, running.process.isRunning {
                if let text = try? String(contentsOf: running.out, encoding: .utf8), text.contains("swoop daemon: node \(node) of the fleet") {
                    return (running, out)
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            let result = await running.wait(timeout: .seconds(1))
            throw DaemonFixtureError(message: "daemon \(node) did not join: \(result.stdout) \(result.stderr)")
        }

        /// The port a daemon's RPC listens on, from its first line.
        static func port(of daemon: SwoopBinary.Running) throws -> Int {
            let text = try String(contentsOf: daemon.out, encoding: .utf8)
            return try #require(text.split(separator: "\n").first?.split(separator: ":").last.flatMap { Int($0.prefix { $0.isNumber }) })
        }

        /// An aria2 call with the secret "s3cret", as a client sends it over HTTP: the whole answer.
        static func call(_ port: Int, _ method: String, _ params: [Any]) async throws -> [String: Any] {
            let request = try JSONSerialization.data(withJSONObject: ["jsonrpc": "2.0", "id": "t", "method": method, "params": ["token:s3cret"] + params])
            let reply = try await RawHTTP.send(port: port, request: RawHTTP.post(port: port, body: Array(request)))
            return (try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any]) ?? [:]
        }
    }

    @Test func daemonsShareTheQueueAndOneKilledLosesItsDownloadsToTheOther() async throws {
        let fleet = try await Fleet()
        let server = try await TestServer.start()
        var bodies: [String: [UInt8]] = [:]
        for index in 0..<8 {
            let body = Resource.random(size: 384 << 10, seed: UInt64(40 + index))
            server.serve("/part-\(index).bin", Resource(body: body, etag: "\"p\(index)\""))
            server.setDefault("/part-\(index).bin", .throttle(bytesPerSecond: 256 << 10))
            bodies["part-\(index).bin"] = body
        }
        let (first, firstOut) = try await fleet.daemon("first")
        let (second, secondOut) = try await fleet.daemon("second")
        let workspace = try SwoopBinary.workspace("swoop-fleet-user").root
        let urls = bodies.keys.sorted().map { server.url("/\($0)") }
        let added = try await fleet.run(["add"] + urls, in: workspace)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdoutLines.count == 8 && added.stdoutLines.allSatisfy { $0.hasPrefix("added ") && $0.hasSuffix(" to the fleet's queue") })
        let nodes = try await fleet.run(["nodes"], in: workspace)
        #expect(nodes.stdoutLines.first?.hasPrefix("NODE ") == true)
        #expect(nodes.stdoutLines.dropFirst().map { String($0.prefix(6)) } == ["first ", "second"], "\(nodes.stdout)")
        // Both run their two; the first is killed while it does.
        let catalogue = try fleet.catalogue()
        let busy = await eventuallyAsync(timeout: .seconds(30)) {
            let entries = (try? await catalogue.entries(in: [.active], offset: 0, limit: 100)) ?? []
            return Set(entries.filter { $0.completedBytes > 0 }.compactMap(\.node)) == ["first", "second"]
        }
        try #require(busy)
        first.signal(SIGKILL)
        _ = await first.wait(timeout: .seconds(10))
        let killedAt = ContinuousClock.now
        let orphaned = try await catalogue.entries(in: [.active], offset: 0, limit: 100).filter { $0.node == "first" }.map(\.id)
        let done = await eventuallyAsync(timeout: .seconds(60)) { (try? await catalogue.counts()) == [.completed: 8] }
        let entries = try await catalogue.entries(in: nil, offset: 0, limit: 100)
        let listed = try await fleet.run(["ls"], in: workspace)
        second.signal(SIGTERM)
        let stopped = await second.wait(timeout: .seconds(30))
        await catalogue.close()
        try await server.shutdown()
        try #require(done, "\(entries.map { "\($0.state) \($0.node ?? "")" })")
        #expect(stopped.status == 0, "\(stopped.stderr)")
        #expect(!orphaned.isEmpty)
        // What the killed daemon ran was taken over, after its lease (4 s here).
        for id in orphaned {
            let entry = entries.first { $0.id == id }
            #expect(entry?.node == "second" && (entry?.epoch ?? 0) >= 2, "\(id)")
        }
        #expect(ContinuousClock.now - killedAt < .seconds(60))
        // Every file complete, byte-exact, under its name in exactly one daemon's directory; the
        // killed daemon left only part files of what it did not finish.
        for (name, body) in bodies {
            let places = [firstOut, secondOut].filter { FileManager.default.fileExists(atPath: $0 + "/" + name) }
            #expect(places.count == 1, "\(name): \(places)")
            if let place = places.first { #expect(sha256Hex(file: place + "/" + name) == sha256Hex(body), "\(name)") }
        }
        #expect(listed.stdoutLines.count == 9 && listed.stdoutLines.dropFirst().allSatisfy { $0.contains(" completed ") }, "\(listed.stdout)")
    }

    @Test func threeDaemonsShareThreeHundredFilesAndFetchEachOnce() async throws {
        let fleet = try await Fleet()
        let server = try await TestServer.start()
        var bodies: [String: [UInt8]] = [:]
        for index in 0..<300 {
            let body = Resource.random(size: 4 << 10, seed: UInt64(1000 + index))
            server.serve("/many-\(index).bin", Resource(body: body, etag: "\"m\(index)\""))
            bodies["many-\(index).bin"] = body
        }
        var daemons: [(running: SwoopBinary.Running, out: String)] = []
        for node in ["red", "green", "blue"] { daemons.append(try await fleet.daemon(node, extra: ["-j", "4"])) }
        let workspace = try SwoopBinary.workspace("swoop-fleet-user").root
        let list = workspace + "/urls.txt"
        try bodies.keys.sorted().map { server.url("/\($0)") }.joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
        #expect(try await fleet.run(["add", "-i", list], in: workspace).status == 0)
        let catalogue = try fleet.catalogue()
        let done = await eventuallyAsync(timeout: .seconds(120)) { (try? await catalogue.counts()) == [.completed: 300] }
        let entries = try await catalogue.entries(in: nil, offset: 0, limit: 400)
        for daemon in daemons { daemon.running.signal(SIGTERM) }
        for daemon in daemons { _ = await daemon.running.wait(timeout: .seconds(30)) }
        await catalogue.close()
        try await server.shutdown()
        try #require(done, "\(Dictionary(grouping: entries, by: \.state).mapValues(\.count))")
        // Each file fetched once (the server's log), byte-exact, in exactly one daemon's directory; all three worked.
        for (name, body) in bodies {
            #expect(server.requests(to: "/\(name)").count == 1, "\(name)")
            let places = daemons.map(\.out).filter { FileManager.default.fileExists(atPath: $0 + "/" + name) }
            #expect(places.count == 1 && sha256Hex(file: places[0] + "/" + name) == sha256Hex(body), "\(name): \(places)")
        }
        #expect(Set(entries.compactMap(\.node)) == ["red", "green", "blue"])
    }

    @Test func pauseResumeAndRemoveActWhereTheDownloadRuns() async throws {
        let fleet = try await Fleet()
        let server = try await TestServer.start()
        let body = Resource.random(size: 1 << 20, seed: 77)
        server.serve("/slow.bin", Resource(body: body, etag: "\"slow\""))
        server.setDefault("/slow.bin", .throttle(bytesPerSecond: 128 << 10))
        let (daemon, out) = try await fleet.daemon("runner")
        let workspace = try SwoopBinary.workspace("swoop-fleet-user").root
        let added = try await fleet.run(["add", server.url("/slow.bin")], in: workspace)
        let id = try #require(added.stdoutLines.first?.split(separator: " ").dropFirst().first.map(String.init))
        let catalogue = try fleet.catalogue()
        #expect(await eventuallyAsync(timeout: .seconds(30)) { (try? await catalogue.entries(in: [.active], offset: 0, limit: 5))?.first?.completedBytes ?? 0 > 0 })
        let paused = try await fleet.run(["pause", id], in: workspace)
        #expect(paused.status == 0 && paused.stdout == "\(id): asked runner, which runs it, to pause it\n", "\(paused.stdout)\(paused.stderr)")
        #expect(await eventuallyAsync(timeout: .seconds(10)) { (try? await catalogue.counts()) == [.paused: 1] })
        let resumed = try await fleet.run(["resume", id], in: workspace)
        #expect(resumed.stdout == "\(id): waiting\n")
        #expect(await eventuallyAsync(timeout: .seconds(30)) { (try? await catalogue.counts()) == [.completed: 1] })
        #expect(sha256Hex(file: out + "/slow.bin") == sha256Hex(body))
        let again = try await fleet.run(["resume", id], in: workspace)
        #expect(again.status != 0 && again.stderr == "swoop: error: \(id) is completed: it cannot be resumed\n", "\(again.stderr)")
        let unknown = try await fleet.run(["rm", "ffffffff"], in: workspace)
        #expect(unknown.status != 0 && unknown.stderr == "swoop: error: no download ffffffff in the fleet\n", "\(unknown.stderr)")
        daemon.signal(SIGTERM)
        _ = await daemon.wait(timeout: .seconds(30))
        await catalogue.close()
        try await server.shutdown()
    }

    @Test func anAria2ClientAddsToTheFleetAndSeesItsDownload() async throws {
        let fleet = try await Fleet()
        let server = try await TestServer.start()
        let body = Resource.random(size: 200_000, seed: 91)
        server.serve("/rpc.bin", Resource(body: body, etag: "\"rpc\""))
        let (daemon, out) = try await fleet.daemon("rpc", extra: ["--secret", "s3cret"])
        let port = try Fleet.port(of: daemon)
        func call(_ method: String, _ params: [Any]) async throws -> [String: Any] { try await Fleet.call(port, method, params) }
        let added = try await call("aria2.addUri", [[server.url("/rpc.bin")], ["out": "renamed.bin"]])
        let gid = try #require(added["result"] as? String, "\(added)")
        let catalogue = try fleet.catalogue()
        let entry = try await catalogue.entries(ids: [Download.ID(gid)]).first
        #expect(entry?.urls == [server.url("/rpc.bin")])
        #expect(await eventuallyAsync(timeout: .seconds(30)) { (try? await catalogue.counts()) == [.completed: 1] })
        let status = try #require(try await call("aria2.tellStatus", [gid, ["gid", "status", "totalLength", "completedLength", "dir"]])["result"] as? [String: String])
        #expect(status == ["gid": gid, "status": "complete", "totalLength": "200000", "completedLength": "200000", "dir": out])
        #expect(sha256Hex(file: out + "/renamed.bin") == sha256Hex(body))
        let bad = try await call("aria2.addUri", [["ftp://127.0.0.1/x"], [:]])
        #expect((bad["error"] as? [String: Any])?["message"] as? String != nil)
        #expect(try await catalogue.counts() == [.completed: 1], "a refused add reaches no queue")
        daemon.signal(SIGTERM)
        _ = await daemon.wait(timeout: .seconds(30))
        await catalogue.close()
        try await server.shutdown()
    }

    @Test func anyDaemonsRPCShowsAndControlsWhatAnotherRuns() async throws {
        let fleet = try await Fleet()
        let server = try await TestServer.start()
        var bodies: [[UInt8]] = []
        for index in 0..<2 {
            let body = Resource.random(size: 1 << 20, seed: UInt64(120 + index))
            server.serve("/r-\(index).bin", Resource(body: body, etag: "\"r\(index)\""))
            server.setDefault("/r-\(index).bin", .throttle(bytesPerSecond: 96 << 10))
            bodies.append(body)
        }
        let (runner, runnerOut) = try await fleet.daemon("runner", extra: ["--secret", "s3cret"])
        let workspace = try SwoopBinary.workspace("swoop-fleet-user").root
        let added = try await fleet.run(["add", server.url("/r-0.bin"), server.url("/r-1.bin")], in: workspace)
        #expect(added.status == 0, "\(added.stderr)")
        let catalogue = try fleet.catalogue()
        // (`add` prints short ids; RPC clients get whole GIDs.)
        let gids = try await catalogue.entries(in: nil, offset: 0, limit: 10).map(\.id.rawValue)
        try #require(gids.count == 2)
        try #require(await eventuallyAsync(timeout: .seconds(30)) {
            ((try? await catalogue.entries(in: [.active], offset: 0, limit: 10)) ?? []).filter { $0.completedBytes > 0 }.count == 2
        })
        // The second daemon has nothing to run: both downloads are the runner's.
        let (watcher, watcherOut) = try await fleet.daemon("watcher", extra: ["--secret", "s3cret"])
        let (near, far) = (try Fleet.port(of: runner), try Fleet.port(of: watcher))
        func result(_ port: Int, _ method: String, _ params: [Any]) async throws -> Any? { try await Fleet.call(port, method, params)["result"] }
        func status(_ port: Int, _ gid: String) async throws -> [String: String] {
            (try await result(port, "aria2.tellStatus", [gid, ["gid", "status", "completedLength"]]) as? [String: String]) ?? [:]
        }

        let active = try #require(try await result(far, "aria2.tellActive", [["gid", "status", "completedLength"]]) as? [[String: String]])
        #expect(active.map { $0["gid"] ?? "" } == gids && active.allSatisfy { $0["status"] == "active" && Int($0["completedLength"] ?? "") ?? 0 > 0 }, "\(active)")
        // On the node that runs it, the same GID, live.
        #expect(try await status(near, gids[0])["status"] == "active")
        let stat = try #require(try await result(far, "aria2.getGlobalStat", []) as? [String: String])
        #expect(stat["numActive"] == "2" && stat["numWaiting"] == "0", "\(stat)")
        let nodes = try #require(try await result(far, "swoop.getNodes", []) as? [[String: String]])
        #expect(nodes.map { $0["name"] ?? "" }.sorted() == ["runner", "watcher"], "\(nodes)")

        // Options changed live on the daemon that runs it, refused by another (which would only store them).
        let limited = try await Fleet.call(far, "aria2.changeOption", [gids[0], ["max-download-limit": "200K"]])
        #expect((limited["error"] as? [String: Any])?["message"] as? String == "download \(gids[0]) runs on node runner (at 127.0.0.1:\(near)): its options cannot change here (call it there, or pause it first)")
        #expect(try await result(near, "aria2.changeOption", [gids[0], ["max-download-limit": "200K"]]) as? String == "OK")
        let option = try #require(try await result(near, "aria2.getOption", [gids[0]]) as? [String: Any])
        #expect(option["max-download-limit"] as? String == "204800", "\(option)")
        #expect(try await catalogue.entries(ids: [Download.ID(gids[0])]).first?.options.contains(#""max-download-limit":"200K""#) == true)

        // Paused and removed from the daemon that does not run them.
        #expect(try await result(far, "aria2.pause", [gids[0]]) as? String == gids[0])
        #expect(try await result(far, "aria2.remove", [gids[1]]) as? String == gids[1])
        let stopped = await eventuallyAsync(timeout: .seconds(10)) {
            let entries = (try? await catalogue.entries(ids: gids.map { Download.ID($0) })) ?? []
            return entries.map(\.state) == [.paused, .removed]
        }
        #expect(stopped)
        #expect(try await status(near, gids[0])["status"] == "paused")
        let waiting = try #require(try await result(far, "aria2.tellWaiting", [0, 10, ["gid", "status"]]) as? [[String: String]])
        #expect(waiting == [["gid": gids[0], "status": "paused"]])
        #expect(try await result(far, "aria2.unpause", [gids[0]]) as? String == gids[0])
        #expect(await eventuallyAsync(timeout: .seconds(60)) { (try? await status(far, gids[0]))?["status"] == "complete" })
        #expect(try await status(near, gids[0])["completedLength"] == "1048576")
        let places = [runnerOut, watcherOut].filter { FileManager.default.fileExists(atPath: $0 + "/r-0.bin") }
        #expect(places.count == 1 && places.allSatisfy { sha256Hex(file: $0 + "/r-0.bin") == sha256Hex(bodies[0]) }, "\(places)")
        #expect(![runnerOut, watcherOut].contains { FileManager.default.fileExists(atPath: $0 + "/r-1.bin") })
        // Every daemon shows where the file is, on the node that wrote it.
        let paths = try await result(far, "aria2.getFiles", [gids[0]]) as? [[String: Any]]
        #expect(paths?.first?["path"] as? String == places.first.map { $0 + "/r-0.bin" }, "\(String(describing: paths))")
        // A link to the file from the daemon that has it; the other names it.
        let link = try await result(near, "swoop.getFileLink", [gids[0]]) as? String
        #expect(link?.hasPrefix("/files/") == true, "\(String(describing: link))")
        let elsewhere = try await Fleet.call(far, "swoop.getFileLink", [gids[0]])
        #expect(
            (elsewhere["error"] as? [String: Any])?["message"] as? String
                == "download \(gids[0])'s file is on node runner (at 127.0.0.1:\(near)): ask that daemon for the link", "\(elsewhere)"
        )
        // A result forgotten from any daemon is gone from the fleet, and from the daemon that ran it.
        #expect(try await result(far, "aria2.removeDownloadResult", [gids[1]]) as? String == "OK")
        #expect(try await catalogue.entries(ids: [Download.ID(gids[1])]).isEmpty)
        let forgotten = try await Fleet.call(near, "aria2.tellStatus", [gids[1]])
        #expect((forgotten["error"] as? [String: Any])?["message"] as? String == "No such download for GID#\(gids[1])", "\(forgotten)")

        for daemon in [runner, watcher] { daemon.signal(SIGTERM) }
        for daemon in [runner, watcher] { _ = await daemon.wait(timeout: .seconds(30)) }
        await catalogue.close()
        try await server.shutdown()
    }

    @Test func aDaemonStoppedBySIGTERMGivesItsDownloadsBackAndFailsNone() async throws {
        let fleet = try await Fleet()
        let server = try await TestServer.start()
        for index in 0..<5 {
            server.serve("/w-\(index).bin", Resource(body: Resource.random(size: 1 << 20, seed: UInt64(60 + index)), etag: "\"w\(index)\""))
            server.setDefault("/w-\(index).bin", .throttle(bytesPerSecond: 64 << 10))
        }
        let (daemon, _) = try await fleet.daemon("stopping")
        let workspace = try SwoopBinary.workspace("swoop-fleet-user").root
        let added = try await fleet.run(["add"] + (0..<5).map { server.url("/w-\($0).bin") }, in: workspace)
        #expect(added.status == 0)
        let catalogue = try fleet.catalogue()
        #expect(await eventuallyAsync(timeout: .seconds(30)) {
            ((try? await catalogue.entries(in: [.active], offset: 0, limit: 10)) ?? []).filter { $0.completedBytes > 0 }.count == 2
        })
        daemon.signal(SIGTERM)
        let stopped = await daemon.wait(timeout: .seconds(30))
        let counts = try await catalogue.counts()
        await catalogue.close()
        try await server.shutdown()
        #expect(stopped.status == 0, "\(stopped.stderr)")
        // The two it ran are waiting again, for any daemon; the three it never ran were never failed.
        #expect(counts == [.waiting: 5], "\(counts)")
    }

    @Test func aSecondDaemonUnderOneNodeNameIsRefusedAndOneStoppedLeavesTheList() async throws {
        let fleet = try await Fleet()
        let (first, _) = try await fleet.daemon("twin")
        let port = try Fleet.port(of: first)
        let (root, out, state) = try SwoopBinary.workspace("swoop-fleet-twin")
        let second = try await SwoopBinary.run(
            ["daemon", "--listen", "127.0.0.1:0", "--state-dir", state, "-d", out, "--store", fleet.url, "--node", "twin", "--lease", "4"],
            in: root, timeout: .seconds(30), environment: fleet.environment
        )
        #expect(second.status == 7, "in use, as for a download another process writes")
        let line = second.stderrLines.last ?? ""
        #expect(
            line.hasPrefix("swoop: error: another daemon runs as node twin of this fleet (heard from ")
                && line.hasSuffix(" s ago at 127.0.0.1:\(port)): give each daemon its own --node"),
            "\(second.stderr)"
        )
        // Stopped by SIGTERM: off the list at once, and the same name joins again without waiting.
        first.signal(SIGTERM)
        _ = await first.wait(timeout: .seconds(30))
        let workspace = try SwoopBinary.workspace("swoop-fleet-user").root
        #expect(try await fleet.run(["nodes"], in: workspace).stdout == "no daemon is in this fleet now\n")
        let (again, _) = try await fleet.daemon("twin")
        again.signal(SIGTERM)
        let result = await again.wait(timeout: .seconds(30))
        #expect(result.status == 0 && !result.stderr.contains("waiting up to the lease"), "\(result.stderr)")
    }

    @Test func aDaemonWithoutTheFleetsSharedDirectoryIsRefused() async throws {
        let fleet = try await Fleet()
        let shared = try makeTemporaryDirectory("swoop-fleet-shared")
        let (sharer, _) = try await fleet.daemon("sharer", extra: ["-d", shared, "--shared-dir"])
        let (root, out, state) = try SwoopBinary.workspace("swoop-fleet-loner")
        let loner = try await SwoopBinary.run(
            ["daemon", "--listen", "127.0.0.1:0", "--state-dir", state, "-d", out, "--store", fleet.url, "--node", "loner", "--lease", "4"],
            in: root, timeout: .seconds(30), environment: fleet.environment
        )
        sharer.signal(SIGTERM)
        _ = await sharer.wait(timeout: .seconds(30))
        #expect(loner.status == 2)
        #expect(
            loner.stderrLines.last
                == "swoop: error: node sharer of this fleet shares \(shared); this daemon would write into its own: give every daemon of a fleet the same -d with --shared-dir, or none",
            "\(loner.stderr)"
        )
    }

    @Test func anUnreachableStoreStopsTheDaemonWithOneLine() async throws {
        let closed = try TestPort(listening: false)
        let (root, out, state) = try SwoopBinary.workspace("swoop-fleet-down")
        let result = try await SwoopBinary.run(
            ["daemon", "--listen", "127.0.0.1:0", "--state-dir", state, "-d", out, "--store", "postgres://swoop@127.0.0.1:\(closed.port)/fleet?sslmode=disable"],
            in: root, timeout: .seconds(30)
        )
        #expect(result.status == 4, "a network error, as the exit codes say")
        #expect(result.stderr == "swoop: error: opening the fleet's store at postgres://swoop@127.0.0.1:\(closed.port)/fleet failed: cannot connect: Connection refused\n")
    }
}
