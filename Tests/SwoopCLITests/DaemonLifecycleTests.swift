import Foundation
import SwoopTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("swoop daemon: restarts, interop with aria2 clients (the binary)", .timeLimit(.minutes(3)))
struct DaemonLifecycleTests {
    @Test(arguments: [SIGKILL, SIGTERM])
    func afterARestartEveryDownloadContinuesByteExactWithItsGID(signal: Int32) async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let body = Resource.random(size: 3 << 20, seed: 7)
        server.serve("/big.bin", Resource(body: body, etag: "\"v1\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"))
        // Slow, every answer (one slow answer beside fast ones finished before a loaded machine looked),
        // so that the daemon stops halfway.
        server.setDefault("/big.bin", .throttle(bytesPerSecond: 512 << 10))
        let small = Resource.random(size: 1000, seed: 8)
        server.serve("/small.bin", Resource(body: small, etag: "\"s\""))
        let first = try await DaemonFixture.start(extra: ["-j", "1"])
        let big = try #require(try await first.result("aria2.addUri", [server.url("/big.bin")]) as? String)
        let queued = try #require(try await first.result("aria2.addUri", [server.url("/small.bin")]) as? String)
        #expect(try await first.waitFor(big, "active"))
        #expect(await eventually { server.bodyBytesSent(to: "/big.bin") >= 1 << 20 })
        first.running.signal(signal)
        let stopped = await first.running.wait(timeout: .seconds(30))
        #expect(stopped.status == (signal == SIGKILL ? 128 + SIGKILL : 0) || stopped.status == SIGKILL)

        let second = try await DaemonFixture.start(root: first.root, extra: ["-j", "1"])
        #expect(try await second.waitFor(big, "complete"))
        #expect(try await second.waitFor(queued, "complete"))
        #expect(sha256Hex(file: first.downloads + "/big.bin") == sha256Hex(body))
        #expect(sha256Hex(file: first.downloads + "/small.bin") == sha256Hex(small))
        // It continued: the second answer for big.bin was a range from where the first stopped.
        let ranges = server.requests(to: "/big.bin").compactMap { $0.header("Range") }
        #expect(ranges.contains { $0.hasPrefix("bytes=") && !$0.hasPrefix("bytes=0-") })
        let result = await second.stop()
        #expect(result.status == 0)
    }

    /// aria2p, a client no one here wrote, drives the daemon through add, completion, pause,
    /// unpause, remove, results, global stat and notifications (`Tests/Interop/aria2p_interop.py`).
    @Test(.enabled(if: Interop.isAvailable)) func aria2pDrivesTheDaemon() async throws {
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        let result = try await Interop.run(["--host", "127.0.0.1", "--port", String(daemon.port), "--secret", daemon.secret, "--dir", daemon.downloads])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdoutLines.last?.hasPrefix("PASS: 12 checks") == true, "\(result.stdout)")
    }

    /// The same script against aria2c itself: what it checks is aria2's behaviour, not ours.
    @Test(.enabled(if: Interop.isAvailable && Interop.hasAria2c)) func theInteropScriptPassesAgainstAria2c() async throws {
        let result = try await Interop.run(["--start-aria2c"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdoutLines.last?.hasPrefix("PASS: 12 checks") == true, "\(result.stdout)")
    }
}

/// Running `Tests/Interop/aria2p_interop.py`. In CI (`CI=true`) it must run: a missing aria2p
/// or aria2c fails the test instead of skipping it.
enum Interop {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Interop/aria2p_interop.py").path
    static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"

    static var isAvailable: Bool {
        isCI || (try? Process.run(URL(fileURLWithPath: "/usr/bin/env"), arguments: ["python3", "-c", "import aria2p"]))
            .map { $0.waitUntilExit(); return $0.terminationStatus == 0 } ?? false
    }

    static var hasAria2c: Bool {
        isCI || FileManager.default.isExecutableFile(atPath: "/usr/bin/aria2c")
    }

    static func run(_ arguments: [String]) async throws -> SwoopBinary.Result {
        let root = try makeTemporaryDirectory("swoop-aria2p")
        return try await SwoopBinary.run(
            ["python3", script, "--timeout", "30"] + arguments, in: root, executable: "/usr/bin/env", timeout: .seconds(150),
            environment: ["TMPDIR": root]
        )
    }
}
