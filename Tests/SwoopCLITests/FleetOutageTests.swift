import Foundation
import SwoopKit
import SwoopPostgres
import SwoopTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// PostgreSQL stopped and started while a fleet downloads (issue 15): transfers go on while their
/// leases last, nothing is lost and nothing fetched twice; past the lease, each daemon stops what
/// it holds (another daemon may take it) and, once the catalogue is back, claims it again and
/// continues from its part file. The server is this suite's own, stopped by its PID.
@Suite("Fleet: PostgreSQL stopped and started during downloads", .enabled(if: TestPhase.runsHeavy))
struct FleetOutageTests {
    typealias Fleet = FleetCommandTests.Fleet

    /// Files of 1 MiB served at `rate` bytes per second, one URL each.
    static func serve(_ server: TestServer, _ names: [String], rate: Int, seed: UInt64) -> [String: [UInt8]] {
        var bodies: [String: [UInt8]] = [:]
        for (index, name) in names.enumerated() {
            let body = Resource.random(size: 1 << 20, seed: seed + UInt64(index))
            server.serve("/\(name)", Resource(body: body, etag: "\"\(name)\""))
            server.setDefault("/\(name)", .throttle(bytesPerSecond: rate))
            bodies[name] = body
        }
        return bodies
    }

    /// Every file complete in exactly one of `directories`, byte-exact.
    static func expectEachOnce(_ bodies: [String: [UInt8]], in directories: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        for (name, body) in bodies.sorted(by: { $0.key < $1.key }) {
            let places = directories.filter { FileManager.default.fileExists(atPath: $0 + "/" + name) }
            #expect(places.count == 1, "\(name): \(places)", sourceLocation: sourceLocation)
            for place in places {
                #expect(sha256Hex(file: place + "/" + name) == sha256Hex(body), "\(name)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func anOutageShorterThanTheLeaseStopsNothingAndFetchesNothingTwice() async throws {
        let postgres = try await PostgresServer.makePrivate()
        defer { postgres.stop() }
        let fleet = try await Fleet(server: postgres)
        let server = try await TestServer.start()
        let names = (0..<4).map { "short-\($0).bin" }
        let bodies = Self.serve(server, names, rate: 128 << 10, seed: 300)
        let (first, firstOut) = try await fleet.daemon("first", extra: ["--lease", "15"])
        let (second, secondOut) = try await fleet.daemon("second", extra: ["--lease", "15"])
        let workspace = try SwoopBinary.workspace("swoop-fleet-user").root
        #expect(try await fleet.run(["add"] + names.map { server.url("/\($0)") }, in: workspace).status == 0)
        let catalogue = try fleet.catalogue()
        try #require(await eventuallyAsync(timeout: .seconds(30)) {
            ((try? await catalogue.entries(in: [.active], offset: 0, limit: 10)) ?? []).filter { $0.completedBytes > 0 }.count == 4
        })
        await catalogue.close()

        postgres.stop()
        try await Task.sleep(for: .seconds(3))
        try await postgres.start()

        let again = try fleet.catalogue()
        let done = await eventuallyAsync(timeout: .seconds(60)) { (try? await again.counts()) == [.completed: 4] }
        let counts = try await again.counts()
        for daemon in [first, second] { daemon.signal(SIGTERM) }
        let results = await [first.wait(timeout: .seconds(30)), second.wait(timeout: .seconds(30))]
        await again.close()
        try await server.shutdown()
        #expect(done, "\(counts)")
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
        // One GET each, every byte sent once.
        for name in names {
            #expect(server.requests(to: "/\(name)").count == 1, "\(name)")
            #expect(server.bodyBytesSent(to: "/\(name)") == 1 << 20, "\(name)")
        }
        Self.expectEachOnce(bodies, in: [firstOut, secondOut])
    }

    @Test func pastTheLeaseTheDaemonStopsAndContinuesFromItsPartFilesWhenTheCatalogueIsBack() async throws {
        let postgres = try await PostgresServer.makePrivate()
        defer { postgres.stop() }
        let fleet = try await Fleet(server: postgres)
        let server = try await TestServer.start()
        let names = (0..<2).map { "long-\($0).bin" }
        let bodies = Self.serve(server, names, rate: 64 << 10, seed: 400)
        let (daemon, out) = try await fleet.daemon("alone")
        let workspace = try SwoopBinary.workspace("swoop-fleet-user").root
        #expect(try await fleet.run(["add"] + names.map { server.url("/\($0)") }, in: workspace).status == 0)
        let catalogue = try fleet.catalogue()
        try #require(await eventuallyAsync(timeout: .seconds(30)) {
            ((try? await catalogue.entries(in: [.active], offset: 0, limit: 10)) ?? []).filter { $0.completedBytes > 0 }.count == 2
        })
        await catalogue.close()

        // Longer than the lease (4 s): the daemon must stop both, since another could take them.
        postgres.stop()
        let stoppedAt = ContinuousClock.now
        // Stopped within the lease less a heartbeat of the last renewal, and a heartbeat: by 4 s.
        try await Task.sleep(until: stoppedAt + .seconds(6))
        let sentThen = names.map { server.bodyBytesSent(to: "/\($0)") }
        try await Task.sleep(until: stoppedAt + .seconds(8))
        let sentLater = names.map { server.bodyBytesSent(to: "/\($0)") }
        try await postgres.start()

        let again = try fleet.catalogue()
        let done = await eventuallyAsync(timeout: .seconds(60)) { (try? await again.counts()) == [.completed: 2] }
        let counts = try await again.counts()
        daemon.signal(SIGTERM)
        let result = await daemon.wait(timeout: .seconds(30))
        await again.close()
        try await server.shutdown()
        #expect(sentLater == sentThen && sentThen.allSatisfy { $0 < 1 << 20 }, "both transfers stopped once the lease ran out unrenewed: \(sentThen) \(sentLater)")
        #expect(done, "\(counts)")
        #expect(result.status == 0, "\(result.stderr)")
        for name in names {
            let requests = server.requests(to: "/\(name)")
            #expect(requests.count == 2 && requests.last?.header("Range")?.hasPrefix("bytes=") == true, "\(name): \(requests.map { $0.header("Range") ?? "-" })")
            // Continued where it stopped: at most the unflushed tail fetched again.
            #expect(server.bodyBytesSent(to: "/\(name)") <= (1 << 20) + (256 << 10), "\(name): \(server.bodyBytesSent(to: "/\(name)"))")
        }
        Self.expectEachOnce(bodies, in: [out])
    }
}
