import Foundation
import SwoopTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `swoop get -x N`: one file over several connections, through the binary.
@Suite("swoop get -x (the binary)", .timeLimit(.minutes(2)))
struct SegmentedCommandTests: CLISuite {
    let cli: CLIWorkspace

    init() async throws {
        cli = try await CLIWorkspace("swoop-x")
    }

    func arguments(_ extra: [String]) -> [String] {
        ["get", "--state-dir", state, "-d", out, "--retry-wait", "0.01", "-x", "4", "--min-split-size", "1M"] + extra
    }

    /// SIGKILL at a seeded moment of a download over 4 connections, run again: byte-exact, and at
    /// most 1 MiB per connection is fetched twice.
    @Test(arguments: [UInt64(1), 2])
    func killNineThenRerunRefetchesAtMostOneMiBPerConnection(round: UInt64) async throws {
        defer { stop() }
        let size = 16 << 20
        let seed = UInt64(Date().timeIntervalSince1970 * 1000) &+ round
        var generator = SplitMix(seed: seed)
        let killAt = (2 << 20) + Int(generator.next() % UInt64(10 << 20))
        print("segmented crash test seed \(seed): SIGKILL after \(killAt) of \(size) bytes sent")
        let body = Resource.random(size: size, seed: seed)
        server.serve("/x.bin", Resource(body: body, etag: "\"x\""))
        // 4 MiB/s per connection: the kill lands mid-segment on every connection.
        server.setDefault("/x.bin", .throttle(bytesPerSecond: 4 << 20))
        let running = try SwoopBinary.Running(arguments([server.url("/x.bin")]), directory: root)
        #expect(await eventually(timeout: .seconds(60)) { server.bodyBytesSent(to: "/x.bin") >= killAt }, "seed \(seed)")
        running.signal(SIGKILL)
        _ = await running.wait()
        let sentBefore = server.bodyBytesSent(to: "/x.bin")

        let rerun = try await SwoopBinary.run(arguments([server.url("/x.bin")]), in: root)
        #expect(rerun.status == 0, "seed \(seed): \(rerun.stderr)")
        #expect(sha256Hex(file: out + "/x.bin") == sha256Hex(body), "seed \(seed)")
        let resent = server.bodyBytesSent(to: "/x.bin") - size
        print("segmented crash test seed \(seed): killed after \(sentBefore) bytes sent, \(resent) bytes sent twice (4 connections)")
        #expect(resent >= 0 && resent <= 4 << 20, "seed \(seed): \(resent) bytes sent twice")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []) == ["x.bin"])
    }

    @Test func badConnectionCountsAndSplitSizesAreUsageErrors() async throws {
        defer { stop() }
        let zero = try await SwoopBinary.run(["get", "--state-dir", state, "-x", "0", server.url("/a")], in: root)
        #expect(zero.status == 2)
        #expect(zero.stderrLines.first?.contains("-x/--connections must be between 1 and 64") == true)
        let size = try await SwoopBinary.run(["get", "--state-dir", state, "--min-split-size", "lots", server.url("/a")], in: root)
        #expect(size.status == 2)
        #expect(size.stderrLines.first?.contains("--min-split-size must be a size of at least 1K") == true)
    }
}
