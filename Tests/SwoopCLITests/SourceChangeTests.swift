import Foundation
import SwoopTesting
import Testing

/// A new URL for the same file continues it, proven by the stored validators; another file at the
/// new URL starts over in the same part file; never a `NAME.1` copy (issue 11, points 1 and 2).
@Suite("swoop get with a new URL for a download it has begun (the binary)")
struct SourceChangeTests: CLISuite {
    let cli: CLIWorkspace

    init() async throws {
        cli = try await CLIWorkspace("swoop-source")
    }

    /// Starts `swoop get ARGUMENTS URL`, whose answer stalls after `bytes`, and interrupts it there.
    func interrupted(_ url: String, at bytes: Int, file: String, _ arguments: [String] = []) async throws {
        let running = try start("get", ["-d", out, "--retry-wait", "0.01"] + arguments + [url])
        #expect(await eventually { fileSize(out + "/" + file + ".swoop") == bytes })
        running.signal(SIGINT)
        #expect(await running.wait().status == 130)
    }

    /// A presigned link re-signed (same object, another query): `get -o` with the new link continues
    /// the same part file, asking the new URL for the rest under the stored ETag, says so in one
    /// line, and fetches the first MiB only once. The store names the new URL; no copy is made.
    @Test func aResignedLinkContinuesTheSameFile() async throws {
        defer { stop() }
        let body = Resource.random(size: 4_000_000, seed: 11)
        server.serve("/bucket/big.iso", Resource(body: body, etag: "\"s3-md5\""))
        server.enqueue("/bucket/big.iso", .stallAfter(bytes: 1_000_000))
        let first = server.url("/bucket/big.iso?X-Amz-Signature=aaa&X-Amz-Expires=60")
        try await interrupted(first, at: 1_000_000, file: "big.iso", ["-o", "big.iso"])

        let second = server.url("/bucket/big.iso?X-Amz-Signature=bbb&X-Amz-Expires=60")
        let result = try await get(["-o", "big.iso", second])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderrLines.contains("swoop: \(second) serves the same file as \(first) (ETag \"s3-md5\"): continuing from 977 KiB"))
        #expect(result.stdoutLines.last?.hasPrefix("\(out)/big.iso (3.81 MiB, 4000000 bytes)") == true)
        #expect(sha256Hex(file: out + "/big.iso") == sha256Hex(body))
        let last = try #require(server.requests(to: "/bucket/big.iso").last)
        #expect(last.uri.contains("X-Amz-Signature=bbb"))
        #expect(last.header("Range") == "bytes=1000000-")
        #expect(last.header("If-Range") == "\"s3-md5\"")
        #expect(server.bodyBytesSent(to: "/bucket/big.iso") <= 4_000_000 + (1 << 20))
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == ["big.iso"])
        let listed = try await list()
        #expect(listed.count == 1)
        #expect(listed.first?["url"] as? String == second)
    }

    /// Another file at the new URL (its ETag differs, so `If-Range` gets the whole file): it starts
    /// over in the same part file and says why; no `NAME.1`, no part file left behind.
    @Test func anotherFileAtTheNewURLStartsOverInTheSamePartFile() async throws {
        defer { stop() }
        server.serve("/a/f.bin", Resource(body: Resource.random(size: 2_000_000, seed: 1), etag: "\"one\""))
        server.enqueue("/a/f.bin", .stallAfter(bytes: 500_000))
        let other = Resource.random(size: 1_500_000, seed: 2)
        server.serve("/b/f.bin", Resource(body: other, etag: "\"two\""))
        try await interrupted(server.url("/a/f.bin"), at: 500_000, file: "f.bin")

        let result = try await get([server.url("/b/f.bin")])
        #expect(result.status == 0, "\(result.stderr)")
        let said = result.stderrLines.first { $0.contains("is not the file") }
        #expect(said == "swoop: \(server.url("/b/f.bin")) is not the file \(server.url("/a/f.bin")) was: the file changed on the server (ETag \"one\" → \"two\"); starting over from 0")
        #expect(sha256Hex(file: out + "/f.bin") == sha256Hex(other))
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == ["f.bin"])
        #expect(server.requests(to: "/b/f.bin").first?.header("If-Range") == "\"one\"")
    }

    /// With only Last-Modified and a length, a new URL does not get the saved bytes (another file
    /// may share both): it starts over at once, saying why and how to keep them; with
    /// `--trust-mirror-length` they are offered under `If-Range` with the date.
    @Test func lastModifiedAloneIsTrustedOnlyWhenAsked() async throws {
        defer { stop() }
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        let body = Resource.random(size: 1_000_000, seed: 3)
        server.serve("/x/lm.bin", Resource(body: body, lastModified: date))
        server.enqueue("/x/lm.bin", .stallAfter(bytes: 200_000))
        try await interrupted(server.url("/x/lm.bin?v=1"), at: 200_000, file: "lm.bin")
        let cautious = try await get([server.url("/x/lm.bin?v=2")])
        #expect(cautious.status == 0, "\(cautious.stderr)")
        #expect(cautious.stderrLines.contains(
            "swoop: \(server.url("/x/lm.bin?v=2")) takes over the download of \(server.url("/x/lm.bin?v=1")); starting over in lm.bin.swoop: \(server.url("/x/lm.bin?v=1")) gave only a Last-Modified date and a length, which another file can share (--trust-mirror-length keeps the bytes on them)"
        ))
        #expect(server.requests(to: "/x/lm.bin").last?.header("Range") == nil)
        #expect(sha256Hex(file: out + "/lm.bin") == sha256Hex(body))

        server.serve("/y/lm2.bin", Resource(body: body, lastModified: date))
        server.enqueue("/y/lm2.bin", .stallAfter(bytes: 200_000))
        try await interrupted(server.url("/y/lm2.bin?v=1"), at: 200_000, file: "lm2.bin")
        let trusting = try await get(["--trust-mirror-length", server.url("/y/lm2.bin?v=2")])
        #expect(trusting.status == 0, "\(trusting.stderr)")
        let last = try #require(server.requests(to: "/y/lm2.bin").last)
        #expect(last.header("Range") == "bytes=200000-")
        #expect(last.header("If-Range") == date)
        #expect(sha256Hex(file: out + "/lm2.bin") == sha256Hex(body))
    }

    /// `swoop resume ID --url NEWURL` moves a known download the same way.
    @Test func resumeWithANewURLContinuesFromIt() async throws {
        defer { stop() }
        let body = Resource.random(size: 2_000_000, seed: 4)
        server.serve("/r.bin", Resource(body: body, etag: "\"r\""))
        server.enqueue("/r.bin", .stallAfter(bytes: 700_000))
        try await interrupted(server.url("/r.bin?sig=1"), at: 700_000, file: "r.bin")
        let id = try #require(try await list().first?["id"] as? String)

        let resumed = try await swoop("resume", [String(id.prefix(8)), "--url", server.url("/r.bin?sig=2"), "--retry-wait", "0.01"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(sha256Hex(file: out + "/r.bin") == sha256Hex(body))
        let last = try #require(server.requests(to: "/r.bin").last)
        #expect(last.uri.hasSuffix("sig=2"))
        #expect(last.header("Range") == "bytes=700000-")
        #expect(try await list().first?["url"] as? String == server.url("/r.bin?sig=2"))

        let twice = try await swoop("resume", ["a", "b", "--url", server.url("/r.bin")])
        #expect(twice.status == 2)
    }

    /// The proof a new URL owes outlives the process that moved the download: `resume --url`
    /// interrupted before the new URL answered with the file, then a plain `resume`, against a
    /// server of another file of the same length that ignores `If-Range` and sends no ETag. The
    /// saved bytes are never continued from it: the download starts over and is that file, whole.
    @Test func theProofANewURLOwesSurvivesAnInterruption() async throws {
        defer { stop() }
        server.serve("/m/a.bin", Resource(body: Resource.random(size: 1_000_000, seed: 5), etag: "\"one\""))
        server.enqueue("/m/a.bin", .stallAfter(bytes: 400_000))
        try await interrupted(server.url("/m/a.bin"), at: 400_000, file: "a.bin", ["-o", "a.bin"])
        let id = try #require(try await list().first?["id"] as? String)

        let other = Resource.random(size: 1_000_000, seed: 6)
        server.serve("/m/b.bin", Resource(body: other))
        server.setDefault("/m/b.bin", .status(503))
        let moving = try start("resume", [String(id.prefix(8)), "--url", server.url("/m/b.bin"), "--retry-wait", "30"])
        #expect(await eventually { !server.requests(to: "/m/b.bin").isEmpty })
        moving.signal(SIGINT)
        #expect(await moving.wait().status == 130)

        server.setDefault("/m/b.bin", .ignoreIfRange)
        let resumed = try await swoop("resume", [String(id.prefix(8)), "--retry-wait", "0.01"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(sha256Hex(file: out + "/a.bin") == sha256Hex(other))
        let said = resumed.stderrLines.first { $0.contains("is not the file") }
        #expect(said == "swoop: \(server.url("/m/b.bin")) is not the file \(server.url("/m/a.bin")) was: it shows no ETag (the saved bytes have \"one\"); starting over from 0")
    }
}
