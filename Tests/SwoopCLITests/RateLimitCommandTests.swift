import Foundation
import SwoopTesting
import Testing

/// `--limit-rate` and `--max-overall-limit` through the built binary: they parse, they hold a
/// download back (a lower bound on time only), and a bad value is exit 2 with one line.
@Suite("swoop get --limit-rate (the binary)", .serialized, .timeLimit(.minutes(2)))
struct RateLimitCommandTests: CLISuite {
    let cli: CLIWorkspace

    init() async throws {
        cli = try await CLIWorkspace("swoop-cli")
    }

    func get(_ arguments: [String]) async throws -> SwoopBinary.Result {
        try await SwoopBinary.run(["get", "-q", "--state-dir", state, "-d", out] + arguments, in: root)
    }

    @Test(arguments: [["--limit-rate", "500K"], ["--max-overall-limit", "0.5M"], ["--limit-rate=512000"]])
    func aRateLimitHoldsTheDownloadBack(options: [String]) async throws {
        defer { stop() }
        // 1.5 MB at 500 KiB/s: 2.93 s.
        let body = serve("/limited.bin", size: 1_500_000)
        let start = ContinuousClock.now
        let result = try await get(options + [server.url("/limited.bin")])
        let took = ContinuousClock.now - start
        #expect(result.status == 0, "\(result.stderr)")
        #expect(took >= .milliseconds(2700))
        #expect(sha256Hex(file: out + "/limited.bin") == sha256Hex(body))
    }

    @Test func zeroMeansNoLimit() async throws {
        defer { stop() }
        let body = serve("/free.bin", size: 200_000)
        let result = try await get(["--limit-rate", "0", "--max-overall-limit", "0", server.url("/free.bin")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(sha256Hex(file: out + "/free.bin") == sha256Hex(body))
    }

    @Test(arguments: [
        (["--limit-rate", "fast"], "swoop: error: invalid --limit-rate 'fast': give bytes per second such as 500K, 2M or 1G (0 for no limit)"),
        (["--max-overall-limit=-1M"], "swoop: error: invalid --max-overall-limit '-1M': give bytes per second such as 500K, 2M or 1G (0 for no limit)"),
        (["--limit-rate", "5X"], "swoop: error: invalid --limit-rate '5X': give bytes per second such as 500K, 2M or 1G (0 for no limit)"),
        (["--limit-rate", "-1"], "swoop: error: invalid --limit-rate '-1': give bytes per second such as 500K, 2M or 1G (0 for no limit)"),
        (["--limit-rate", "0.5"], "swoop: error: invalid --limit-rate '0.5': less than 1 byte per second (0 is no limit)"),
    ])
    func aBadRateIsExitTwoWithOneLineAndNothingCreated(options: [String], line: String) async throws {
        defer { stop() }
        let result = try await get(options + [server.url("/x.bin")])
        #expect(result.status == 2)
        #expect(result.stderrLines == [line])
        #expect(result.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: state))
        #expect(server.requests.isEmpty)
    }
}
