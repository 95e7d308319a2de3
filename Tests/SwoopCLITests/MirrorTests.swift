import Foundation
import SwoopTesting
import Testing

/// Several sources for one file through the binary: `--mirror`, a TAB-separated `-i` line, a
/// Metalink with hashes (issue 11, point 3).
@Suite("swoop get with mirrors and Metalink (the binary)")
struct MirrorTests: CLISuite {
    let cli: CLIWorkspace

    init() async throws {
        cli = try await CLIWorkspace("swoop-mirror")
    }

    /// Serves the same 3 MB at /a/NAME, /b/NAME and /c/NAME (one ETag) and returns the bytes.
    func serveThree(_ name: String, seed: UInt64) -> [UInt8] {
        let body = Resource.random(size: 3_000_000, seed: seed)
        for dir in ["a", "b", "c"] { server.serve("/\(dir)/\(name)", Resource(body: body, etag: "\"\(name)\"")) }
        return body
    }

    @Test func mirrorsFromTheCommandLineAndAListLineShareTheFile() async throws {
        defer { stop() }
        let body = serveThree("m.bin", seed: 1)
        let result = try await get(["--min-split-size", "256K", "--mirror", server.url("/b/m.bin"), "--mirror", server.url("/c/m.bin"), server.url("/a/m.bin")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(sha256Hex(file: out + "/m.bin") == sha256Hex(body))
        for dir in ["a", "b", "c"] { #expect(!server.requests(to: "/\(dir)/m.bin").isEmpty, "no request to /\(dir)") }
        // Without -x, one connection per source: stored as the download's setting.
        let id = try #require(try await list().first?["id"] as? String)
        #expect(try await swoop("ls", [id]).stdoutLines.contains("options: connections 3, min-split-size 256 KiB, retry-wait 0.01s"))

        let other = serveThree("t.bin", seed: 2)
        let listFile = root + "/mirrors.txt"
        try "\(server.url("/a/t.bin"))\t\(server.url("/b/t.bin"))\t\(server.url("/c/t.bin"))\tnamed.bin\n".write(toFile: listFile, atomically: true, encoding: .utf8)
        let listed = try await get(["--min-split-size", "256K", "-i", listFile])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(sha256Hex(file: out + "/named.bin") == sha256Hex(other))
        #expect(!server.requests(to: "/c/t.bin").isEmpty)
    }

    /// A Metalink (RFC 5854) names the file, its mirrors by priority and its hash: byte-exact and
    /// verified; a wrong hash is exit 6 and no file.
    @Test func aMetalinkWithHashes() async throws {
        defer { stop() }
        let body = serveThree("ml.bin", seed: 3)
        func metalink(_ name: String, hash: String) throws -> String {
            let path = root + "/\(name).meta4"
            try """
                <?xml version="1.0" encoding="UTF-8"?>
                <metalink xmlns="urn:ietf:params:xml:ns:metalink">
                  <file name="\(name)">
                    <size>3000000</size>
                    <hash type="sha-256">\(hash)</hash>
                    <url priority="2">\(server.url("/b/ml.bin"))</url>
                    <url priority="1">\(server.url("/a/ml.bin"))</url>
                    <url priority="3">\(server.url("/c/ml.bin"))</url>
                  </file>
                </metalink>
                """.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let good = try await get(["--min-split-size", "256K", "--metalink", try metalink("good.bin", hash: sha256Hex(body))])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(sha256Hex(file: out + "/good.bin") == sha256Hex(body))
        // Priority 1 is the URL (its first request is the probe); the others are mirrors.
        #expect(server.requests(to: "/a/ml.bin").first?.header("Range") == "bytes=0-262143")

        let bad = try await get(["--min-split-size", "256K", "--metalink", try metalink("bad.bin", hash: String(repeating: "0", count: 64))])
        #expect(bad.status == 6)
        #expect(!FileManager.default.fileExists(atPath: out + "/bad.bin"))

        let broken = root + "/broken.meta4"
        try "<metalink><file name=\"../x\"><url>http://h/x</url></file></metalink>".write(toFile: broken, atomically: true, encoding: .utf8)
        let combined = try await get(["--metalink", broken, "-o", "x.bin"])
        #expect(combined.status == 2)
        #expect(combined.stderrLines.first == "swoop: error: a Metalink names its files and hashes: no -o or --checksum with --metalink")
        let refused = try await get(["--metalink", broken])
        #expect(refused.status == 2)
        #expect(refused.stderrLines == ["swoop: error: Metalink \(broken): the file name '../x' is not a plain file name"])

        // A Metalink that cannot be read says why.
        let missing = try await get(["--metalink", root + "/none.meta4"])
        #expect(missing.status == 3)
        #expect(
            missing.stderrLines == ["swoop: error: cannot read Metalink file \(root)/none.meta4: No such file or directory"]
        )
        let directory = try await get(["--metalink", root])
        #expect(directory.status == 3)
        #expect(directory.stderrLines == ["swoop: error: cannot read Metalink file \(root): it is a directory"])
    }
}
