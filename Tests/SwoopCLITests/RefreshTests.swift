import Foundation
import SwoopTesting
import Testing

/// `swoop get --refresh` re-checks a finished file (issue 11, point 4).
@Suite("swoop get --refresh (the binary)")
struct RefreshTests: CLISuite {
    let cli: CLIWorkspace

    init() async throws {
        cli = try await CLIWorkspace("swoop-refresh")
    }

    /// Unchanged: one conditional request (its ETag and date), `304`, "unchanged", the file as it
    /// was. Without `--refresh`: no request at all. Changed: downloaded again into the part file
    /// beside it, the old file readable until the new one is complete, then replaced.
    @Test func aFinishedFileIsCheckedAndReplacedOnlyWhenChanged() async throws {
        defer { stop() }
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        let first = Resource.random(size: 300_000, seed: 1)
        server.serve("/n.bin", Resource(body: first, etag: "\"v1\"", lastModified: date))
        let url = server.url("/n.bin")
        #expect(try await get([url]).status == 0)

        let plain = try await get([url])
        #expect(plain.stdoutLines == ["\(out)/n.bin is already complete (293 KiB, 300000 bytes)"])
        #expect(server.requests(to: "/n.bin").count == 1)

        let unchanged = try await get(["--refresh", url])
        #expect(unchanged.status == 0, "\(unchanged.stderr)")
        #expect(unchanged.stderrLines == ["swoop: \(out)/n.bin is unchanged on the server"])
        #expect(unchanged.stdoutLines == ["\(out)/n.bin is already complete (293 KiB, 300000 bytes)"])
        let check = try #require(server.requests(to: "/n.bin").last)
        #expect(check.header("If-None-Match") == "\"v1\"")
        #expect(check.header("If-Modified-Since") == date)
        #expect(server.requests(to: "/n.bin").count == 2)

        // A new version, slow enough to look at the old file while it comes.
        let second = Resource.random(size: 400_000, seed: 2)
        server.serve("/n.bin", Resource(body: second, etag: "\"v2\""))
        // (Four seconds: a loaded machine can leave the looking task unscheduled for a second or more.)
        server.setDefault("/n.bin", .throttle(bytesPerSecond: 100_000))
        let running = try start("get", ["-d", out, "-N", url])
        #expect(await eventually { (fileSize(out + "/n.bin.swoop") ?? 0) > 0 })
        #expect(sha256Hex(file: out + "/n.bin") == sha256Hex(first))
        let changed = await running.wait()
        #expect(changed.status == 0, "\(changed.stderr)")
        #expect(changed.stderrLines.contains("swoop: \(url) changed on the server: downloading it again (\(out)/n.bin stays until the new one is complete)"))
        #expect(sha256Hex(file: out + "/n.bin") == sha256Hex(second))
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == ["n.bin"])
        #expect(try await list().first?["state"] as? String == "completed")
    }
}
