import Foundation
import SwoopKit
import SwoopTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Three `swoop daemon --shared-dir` processes of one fleet writing into one directory (issue 15's
/// second storage mode): a file is split into 32 parts that all three fetch into one part file, and
/// it is finished byte-exact under its name. The directory is in /dev/shm where there is one.
///
/// 32 MiB in `swift test`; 1 GiB with `SWOOP_TEST_GIGABYTE=1`, which `scripts/test` runs after the
/// whole suite, alone: moving a gigabyte through loopback takes this machine's two cores for
/// seconds, and the suite's timing-bound tests beside it fail.
@Suite("Fleet: daemons sharing one download directory (the binary)", .timeLimit(.minutes(5)), .enabled(if: TestPhase.runsHeavy))
struct FleetSharedDirectoryTests {
    static let size = ProcessInfo.processInfo.environment["SWOOP_TEST_GIGABYTE"] == "1" ? 1 << 30 : 32 << 20

    @Test func threeDaemonsSplitAFileAndItIsByteExact() async throws {
        let fleet = try await FleetCommandTests.Fleet()
        let server = try await TestServer.start()
        let size = Self.size
        let body = Resource.random(size: size, seed: 717)
        server.serve("/one.img", Resource(body: body, etag: "\"one\""))
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()
        let shared = base + "swoop-shared-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: shared) }
        var daemons: [SwoopBinary.Running] = []
        for node in ["one", "two", "three"] {
            let (daemon, _) = try await fleet.daemon(node, extra: ["-d", shared, "--shared-dir", "--part-size", "\(size >> 25)M", "-j", "3"])
            daemons.append(daemon)
        }
        let startLine = try String(contentsOf: daemons[0].out, encoding: .utf8)
        #expect(startLine.contains("swoop daemon: \(shared) is shared by the fleet: files of \(ByteFormatting.format(size >> 4)) or more are split across its daemons"), "\(startLine)")
        let workspace = try SwoopBinary.workspace("swoop-fleet-user").root
        #expect(try await fleet.run(["add", server.url("/one.img")], in: workspace).status == 0)
        let catalogue = try fleet.catalogue()
        let done = await eventuallyAsync(timeout: .seconds(max(60, size >> 23))) { (try? await catalogue.counts()) == [.completed: 1] }
        let entry = try await catalogue.entries(in: nil, offset: 0, limit: 1).first
        let parts = try await catalogue.parts(of: try #require(entry?.id))
        let listed = try await fleet.run(["ls"], in: workspace)
        for daemon in daemons { daemon.signal(SIGTERM) }
        for daemon in daemons { _ = await daemon.wait(timeout: .seconds(30)) }
        await catalogue.close()
        try await server.shutdown()
        try #require(done, "\(String(describing: entry))")

        #expect(sha256Hex(file: shared + "/one.img") == sha256Hex(body))
        #expect(try FileManager.default.contentsOfDirectory(atPath: shared) == ["one.img"], "no part file left")
        #expect(parts.count == 32 && parts.allSatisfy { $0.state == .completed })
        #expect(Set(parts.compactMap(\.node)) == ["one", "two", "three"], "every daemon fetched parts")
        // A probe of one byte, then every part once: no byte fetched twice.
        #expect(server.requests(to: "/one.img").count == 33)
        #expect(server.bodyBytesSent(to: "/one.img") == size + 1)
        #expect(listed.stdoutLines.count == 2 && listed.stdoutLines[1].contains(" completed "), "\(listed.stdout)")
    }
}
