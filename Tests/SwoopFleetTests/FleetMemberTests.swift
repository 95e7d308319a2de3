import Foundation
import Logging
import SwoopKit
import SwoopStore
import SwoopTesting
import Testing

/// Daemons sharing one queue (issue 15), in one test process: each node a `DownloadManager` with
/// its own state and download directories and a `FleetMember` on its own catalogue connection.
@Suite("Fleet members: sharing a queue, taking over, controls", .enabled(if: TestPhase.runsHeavy))
struct FleetMemberTests {
    /// One node: its manager, its member and their tasks.
    final class Node: Sendable {
        let name: String
        let catalogue: any DownloadCatalogue
        let manager: DownloadManager
        let member: FleetMember
        let directory: String
        let runner: Task<Void, Never>
        let membership: Task<Void, any Error>

        /// Leases of 10 s: a loaded machine can stall a node for seconds, and a lease that ran out
        /// is taken over (the download then runs twice, once on each node).
        /// With `shared`, every node writes into that one directory and splits files of two
        /// `partSize`s or more across the fleet.
        init(
            _ name: String, catalogue: any DownloadCatalogue, maxActive: Int = 4, lease: Duration = .seconds(10), shared: String? = nil,
            partSize: Int = 64 << 20, partFlushBytes: Int = 8 << 20
        ) throws {
            self.name = name
            self.catalogue = catalogue
            let base = try makeTemporaryDirectory("swoop-node-\(name)")
            directory = shared ?? base + "/files"
            var configuration = Configuration()
            configuration.lockDirectory = base + "/locks"
            for folder in ["/locks", "/files"] { try FileManager.default.createDirectory(atPath: base + folder, withIntermediateDirectories: true) }
            configuration.queue.maxConcurrentDownloads = maxActive
            configuration.retry.baseDelay = .milliseconds(10)
            configuration.retry.maxDelay = .milliseconds(50)
            let manager = try DownloadManager(configuration: configuration, store: try SQLiteDownloadStore(directory: base + "/state"))
            self.manager = manager
            var settings = FleetMember.Settings(node: name, address: "127.0.0.1:0", maxActive: maxActive)
            settings.lease = lease
            settings.heartbeat = .milliseconds(200)
            settings.sharedDirectory = shared
            (settings.partSize, settings.partFlushBytes) = (partSize, partFlushBytes)
            let directory = self.directory
            let member = FleetMember(manager: manager, catalogue: catalogue, settings: settings, logger: Logger(label: "test.\(name)")) { entry in
                var request = try DownloadRequest(url: entry.urls[0], directory: directory)
                request.mirrors = entry.urls.dropFirst().compactMap(URL.init(string:))
                return request
            }
            self.member = member
            runner = Task { await manager.run() }
            membership = Task { try await member.run() }
        }

        /// Stops as a daemon does on SIGTERM: transfers interrupted, claims given back.
        func stop() async {
            try? await manager.shutdown()
            membership.cancel()
            _ = await membership.result
            await runner.value
            await catalogue.close()
        }

        /// Dies as a daemon does on `kill -9`: nothing more reaches the catalogue, nothing is given back.
        func die() async {
            await catalogue.close()
            membership.cancel()
            _ = await membership.result
            try? await manager.shutdown()
            await runner.value
        }

        func files() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { !$0.hasSuffix(".swoop") }
        }
    }

    /// Serves `count` files of `size` random bytes at `/NAME-i`, each at `rate` bytes/s when given.
    func serve(_ server: TestServer, _ count: Int, name: String = "f", size: Int, rate: Int? = nil) -> [String: [UInt8]] {
        var bodies: [String: [UInt8]] = [:]
        for index in 0..<count {
            let path = "/\(name)-\(index)"
            let body = Resource.random(size: size, seed: UInt64(index + 1))
            server.serve(path, Resource(body: body, etag: "\"\(name)\(index)\""))
            if let rate { server.setDefault(path, .throttle(bytesPerSecond: rate)) }
            bodies["\(name)-\(index)"] = body
        }
        return bodies
    }

    /// A fleet of two: node "runner", and another daemon's catalogue (`user`) that added `count`
    /// downloads of the files `serve` makes; returns once the runner has written bytes of each.
    struct Running {
        let server: TestServer
        let bodies: [String: [UInt8]]
        let node: Node
        let user: any DownloadCatalogue
        let items: [CatalogueItem]
    }

    func running(_ kind: CatalogueKind, _ count: Int, size: Int, rate: Int) async throws -> Running {
        let server = try await TestServer.start()
        let bodies = serve(server, count, size: size, rate: rate)
        let fleet = try await kind.makeFleet(2)
        let node = try Node("runner", catalogue: fleet[0])
        let user = fleet[1]
        let items = (0..<count).map { CatalogueItem(urls: [server.url("/f-\($0)")]) }
        try await user.add(items)
        try #require(
            try await until(.seconds(30)) {
                let entries = try await user.entries(ids: items.map(\.id))
                return entries.count == count && entries.allSatisfy { $0.completedBytes > 0 }
            }
        )
        return Running(server: server, bodies: bodies, node: node, user: user, items: items)
    }


    @Test(arguments: CatalogueKind.allCases)
    func threeNodesShareTheQueueAndFetchEachFileOnce(kind: CatalogueKind) async throws {
        let server = try await TestServer.start()
        let bodies = serve(server, 300, size: 16 << 10, rate: 256 << 10)
        let fleet = try await kind.makeFleet(4)
        let nodes = try (0..<3).map { try Node("node\($0)", catalogue: fleet[$0]) }
        let user = fleet[3]
        try await user.add(bodies.keys.sorted().map { CatalogueItem(urls: [server.url("/\($0)")]) })
        let done = try await until { try await user.counts() == [.completed: 300] }
        let counts = try await user.counts()
        let errors = Set(try await user.entries(in: [.failed], offset: 0, limit: 5).compactMap(\.error))
        for node in nodes { await node.stop() }
        await user.close()
        try await server.shutdown()
        try #require(done, "\(counts) \(errors)")
        // Each file fetched once (one GET), written by one node, byte-exact.
        for name in bodies.keys {
            #expect(server.requests(to: "/\(name)").count == 1, "\(name)")
        }
        var written: [String: String] = [:]
        for node in nodes {
            for file in node.files() {
                #expect(written[file] == nil, "\(file) written by \(written[file] ?? "") and \(node.name)")
                written[file] = node.name
                #expect(sha256Hex(file: node.directory + "/" + file) == sha256Hex(bodies[file] ?? []), "\(file)")
            }
        }
        #expect(Set(written.keys) == Set(bodies.keys))
        #expect(Set(written.values).count >= 2, "the work was shared: \(written)")
    }

    @Test(arguments: CatalogueKind.allCases)
    func aNodeThatDiesLosesItsDownloadsToAnother(kind: CatalogueKind) async throws {
        let server = try await TestServer.start()
        let bodies = serve(server, 3, size: 512 << 10, rate: 128 << 10)
        let fleet = try await kind.makeFleet(3)
        let user = fleet[2]
        let first = try Node("first", catalogue: fleet[0], lease: .seconds(3))
        let items = bodies.keys.sorted().map { CatalogueItem(urls: [server.url("/\($0)")]) }
        try await user.add(items)
        let running = try await until(.seconds(30)) {
            let entries = try await user.entries(ids: items.map(\.id))
            return entries.allSatisfy { $0.state == .active && $0.node == "first" } && entries.contains { $0.completedBytes > 0 }
        }
        try #require(running)
        await first.die()
        let died = ContinuousClock.now
        let second = try Node("second", catalogue: fleet[1], lease: .seconds(3))
        let takenOver = try await until(.seconds(30)) {
            try await user.entries(ids: items.map(\.id)).allSatisfy { $0.node == "second" && $0.state == .active }
        }
        let tookOverAfter = ContinuousClock.now - died
        let done = try await until { try await user.counts() == [.completed: 3] }
        let entries = try await user.entries(ids: items.map(\.id))
        await second.stop()
        await user.close()
        try await server.shutdown()
        #expect(takenOver, "taken over after \(tookOverAfter)")
        try #require(done, "\(entries.map { ($0.state, $0.node ?? "") })")
        #expect(entries.allSatisfy { $0.epoch >= 2 && $0.node == "second" })
        for (name, body) in bodies {
            #expect(sha256Hex(file: second.directory + "/" + name) == sha256Hex(body))
        }
        #expect(tookOverAfter < .seconds(10))
    }

    @Test(arguments: CatalogueKind.allCases)
    func aPauseAskedOfAnyDaemonStopsTheDownloadWhereItRuns(kind: CatalogueKind) async throws {
        let fleet = try await running(kind, 1, size: 1 << 20, rate: 256 << 10)
        let (server, bodies, node, user, item) = (fleet.server, fleet.bodies, fleet.node, fleet.user, fleet.items[0])
        #expect(try await user.control(.pause, ids: [item.id]) == [item.id: .asked(node: "runner")])
        let asked = ContinuousClock.now
        let paused = try await until(.seconds(10)) { try await user.entries(ids: [item.id]).first?.state == .paused }
        let pausedAfter = ContinuousClock.now - asked
        let local = try await node.manager.downloads()
        #expect(paused, "paused after \(pausedAfter)")
        #expect(local.map(\.state) == [.paused])
        #expect(pausedAfter < .seconds(3))
        // Resumed anywhere: claimed again, finished from its saved bytes.
        #expect(try await user.control(.resume, ids: [item.id]) == [item.id: .done(.waiting)])
        let done = try await until { try await user.entries(ids: [item.id]).first?.state == .completed }
        await node.stop()
        await user.close()
        try await server.shutdown()
        #expect(done)
        #expect(sha256Hex(file: node.directory + "/f-0") == sha256Hex(bodies["f-0"] ?? []))
        #expect(server.bodyBytesSent(to: "/f-0") < (1 << 20) + (512 << 10), "continued, not fetched again")
    }

    /// changeUri on the daemon that runs the download pauses it for the change and resumes it at
    /// once: its claim goes on (no end written), and it completes from where it was.
    @Test(arguments: CatalogueKind.allCases)
    func aDownloadWhoseSourceChangesWhileItRunsKeepsItsClaim(kind: CatalogueKind) async throws {
        let fleet = try await running(kind, 1, size: 1 << 20, rate: 256 << 10)
        let (server, bodies, node, user, item) = (fleet.server, fleet.bodies, fleet.node, fleet.user, fleet.items[0])
        server.serve("/moved", Resource(body: bodies["f-0"] ?? [], etag: "\"f0\""))
        try await node.manager.changeURL(item.id, to: server.url("/moved"))
        let done = try await until { try await user.counts() == [.completed: 1] }
        let entry = try await user.entries(ids: [item.id]).first
        await node.stop()
        await user.close()
        try await server.shutdown()
        #expect(done, "\(String(describing: entry))")
        #expect(entry?.node == "runner" && entry?.epoch == 1, "one claim, never ended and claimed again")
        #expect(sha256Hex(file: node.directory + "/f-0") == sha256Hex(bodies["f-0"] ?? []))
        let range = server.requests(to: "/moved").first?.header("Range") ?? ""
        #expect(range.hasPrefix("bytes=") && range != "bytes=0-", "continued: \(range)")
    }

    /// A change of sources refused while the download runs (another download has that URL): it
    /// runs on as before, under the same claim, and completes.
    @Test(arguments: CatalogueKind.allCases)
    func aRefusedChangeOfSourcesLeavesTheDownloadRunning(kind: CatalogueKind) async throws {
        let fleet = try await running(kind, 2, size: 512 << 10, rate: 128 << 10)
        let (server, bodies, node, user, items) = (fleet.server, fleet.bodies, fleet.node, fleet.user, fleet.items)
        await #expect(throws: SwoopError.self) { try await node.manager.changeURL(items[0].id, to: server.url("/f-1")) }
        let done = try await until { try await user.counts() == [.completed: 2] }
        let entries = try await user.entries(ids: items.map(\.id))
        await node.stop()
        await user.close()
        try await server.shutdown()
        #expect(done, "\(entries.map { "\($0.state) \($0.epoch)" })")
        #expect(entries.allSatisfy { $0.node == "runner" && $0.epoch == 1 })
        #expect(sha256Hex(file: node.directory + "/f-0") == sha256Hex(bodies["f-0"] ?? []))
    }
}
