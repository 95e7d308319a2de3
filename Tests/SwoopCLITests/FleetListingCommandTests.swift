import Foundation
import SwoopKit
import SwoopPostgres
import SwoopTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `swoop ls` and `rm` with `--store` (issue 15): one download in full, the JSON, and forgetting,
/// a running one once its daemon stopped it.
@Suite("Fleet commands: ls and rm on the shared queue", .enabled(if: TestPhase.runsHeavy))
struct FleetListingCommandTests {
    typealias Fleet = FleetCommandTests.Fleet

    @Test func lsAndRmWithStoreShowAndForgetTheFleetsDownloads() async throws {
        let fleet = try await Fleet()
        let server = try await TestServer.start()
        for index in 0..<3 { server.serve("/d-\(index).bin", Resource(body: Resource.random(size: 10_000, seed: UInt64(300 + index)), etag: "\"d\(index)\"")) }
        let (daemon, out) = try await fleet.daemon("keeper")
        let workspace = try SwoopBinary.workspace("swoop-fleet-user").root
        #expect(try await fleet.run(["add"] + (0..<3).map { server.url("/d-\($0).bin") }, in: workspace).status == 0)
        let catalogue = try fleet.catalogue()
        #expect(await eventuallyAsync(timeout: .seconds(30)) { (try? await catalogue.counts()) == [.completed: 3] })
        let ids = try await catalogue.entries(in: nil, offset: 0, limit: 10).map(\.id.rawValue)
        daemon.signal(SIGTERM)
        _ = await daemon.wait(timeout: .seconds(30))

        let one = try await fleet.run(["ls", String(ids[1].prefix(8))], in: workspace)
        #expect(one.status == 0, "\(one.stderr)")
        #expect(one.stdoutLines.prefix(7) == [
            "id:     \(ids[1])", "url:    \(server.url("/d-1.bin"))", "state:  completed", "node:   keeper (claim 1)", "file:   \(out)/d-1.bin",
            "size:   9.77 KiB (10000 bytes)", "done:   10000 bytes",
        ], "\(one.stdout)")
        let json = try await fleet.run(["ls", "--json"], in: workspace)
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]], "\(json.stdout)")
        #expect(listed.map { $0["id"] as? String ?? "" } == ids)
        #expect(listed.allSatisfy { $0["state"] as? String == "completed" && $0["node"] as? String == "keeper" && $0["completedBytes"] as? Int == 10_000 })
        #expect(listed.map { $0["destination"] as? String } == (0..<3).map { out + "/d-\($0).bin" })

        let removed = try await fleet.run(["rm", String(ids[0].prefix(8))], in: workspace)
        #expect(removed.status == 0 && removed.stdout == "\(ids[0].prefix(8)): removed\n", "\(removed.stdout)\(removed.stderr)")
        #expect(try await catalogue.entries(ids: [Download.ID(ids[0])]).isEmpty)
        let purged = try await fleet.run(["rm", "--completed"], in: workspace)
        #expect(purged.stdout == "removed 2 completed downloads from the fleet\n", "\(purged.stdout)\(purged.stderr)")
        #expect(try await fleet.run(["ls"], in: workspace).stdout == "no downloads in the fleet\n")
        // A database with no fleet (a typo in its name) is said to be one, not made one.
        let elsewhere = try await Fleet(server: fleet.server)
        let none = try await elsewhere.run(["add", server.url("/d-0.bin")], in: workspace)
        #expect(none.status != 0 && none.stderr.contains("no fleet at postgres://"), "\(none.stderr)")
        #expect(try await elsewhere.server.psql("SELECT to_regclass('swoop_downloads') IS NULL", database: elsewhere.database) == "t")
        let relative = try await fleet.run(["add", "-d", "sub", server.url("/d-0.bin")], in: workspace)
        #expect(relative.status == 2 && relative.stderr == "swoop: error: with --store, -d is a path on the daemons' machines: give it absolute (got sub)\n", "\(relative.stderr)")
        let deleting = try await fleet.run(["rm", "--delete-file", ids[1]], in: workspace)
        #expect(deleting.status != 0 && deleting.stderr.contains("a fleet's files are on its nodes"), "\(deleting.stderr)")
        await catalogue.close()
        try await server.shutdown()
    }

    @Test func rmOfARunningDownloadForgetsItOnceItsDaemonStoppedIt() async throws {
        let fleet = try await Fleet()
        let server = try await TestServer.start()
        server.serve("/slow.bin", Resource(body: Resource.random(size: 1 << 20, seed: 330), etag: "\"slow\""))
        server.setDefault("/slow.bin", .throttle(bytesPerSecond: 64 << 10))
        let (daemon, out) = try await fleet.daemon("runner")
        let workspace = try SwoopBinary.workspace("swoop-fleet-user").root
        #expect(try await fleet.run(["add", server.url("/slow.bin")], in: workspace).status == 0)
        let catalogue = try fleet.catalogue()
        #expect(await eventuallyAsync(timeout: .seconds(30)) { (try? await catalogue.entries(in: [.active], offset: 0, limit: 5))?.first?.completedBytes ?? 0 > 0 })
        let id = try #require(try await catalogue.entries(in: nil, offset: 0, limit: 5).first?.id.rawValue)
        let removed = try await fleet.run(["rm", id], in: workspace)
        #expect(removed.status == 0 && removed.stdout == "\(id.prefix(8)): removed\n", "\(removed.stdout)\(removed.stderr)")
        #expect(try await catalogue.counts() == [:])
        // Stopped where it ran: no further request, and no file under its final name.
        #expect(server.requests(to: "/slow.bin").count == 1)
        #expect(!FileManager.default.fileExists(atPath: out + "/slow.bin"))
        daemon.signal(SIGTERM)
        _ = await daemon.wait(timeout: .seconds(30))
        await catalogue.close()
        try await server.shutdown()
    }
}
