import Foundation
import SwoopTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A file that appears under the final name while the download runs: never replaced, the download
/// kept in its part file, and the one error line says how to go on; going on as it says finishes.
@Suite("swoop get when the name is taken meanwhile (the binary)", .timeLimit(.minutes(2)))
struct NameTakenMeanwhileTests: CLISuite {
    let cli: CLIWorkspace

    init() async throws {
        cli = try await CLIWorkspace("swoop-taken")
    }

    @Test(arguments: ["move it away", "--overwrite"])
    func theErrorSaysHowToGoOnAndGoingOnFinishes(goingOn: String) async throws {
        defer { stop() }
        // Slow enough (about 7 s) that the file is still downloading when the test, on a loaded
        // machine, gets round to putting its own under the name.
        let body = serve("/t.bin", size: 2_000_000)
        server.setDefault("/t.bin", .throttle(bytesPerSecond: 300_000))
        let running = try start("get", ["-d", out, server.url("/t.bin")])
        try #require(await eventually { (fileSize(out + "/t.bin.swoop") ?? 0) > 0 })
        // Only while it downloads (O_EXCL): a download already finished is never overwritten here.
        let fd = open(out + "/t.bin", O_WRONLY | O_CREAT | O_EXCL, 0o644)
        try #require(fd >= 0, "the download finished before the test could take its name")
        _ = "the user's own".withCString { Glibc.write(fd, $0, strlen($0)) }
        close(fd)
        let failed = await running.wait()
        #expect(failed.status == 3)
        #expect(
            failed.stderrLines.last == "swoop: error: cannot rename \(out)/t.bin.swoop: \(out)/t.bin appeared meanwhile; the download is kept in \(out)/t.bin.swoop"
                + " (move \(out)/t.bin away and run the same command again, or add --overwrite to replace it)",
            "\(failed.stderr)"
        )
        #expect(try String(contentsOfFile: out + "/t.bin", encoding: .utf8) == "the user's own")
        #expect(fileSize(out + "/t.bin.swoop") == body.count)

        // As it says (the file moved away, or replaced on purpose): the same command finishes without
        // fetching the bytes again.
        var options = ["-d", out, server.url("/t.bin")]
        if goingOn == "--overwrite" {
            options.insert("--overwrite", at: 0)
        } else {
            try FileManager.default.moveItem(atPath: out + "/t.bin", toPath: root + "/mine.bin")
        }
        let sent = server.bodyBytesSent(to: "/t.bin")
        let again = try await swoop("get", options)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(sha256Hex(file: out + "/t.bin") == sha256Hex(body))
        #expect(server.bodyBytesSent(to: "/t.bin") - sent < 1 << 20)
    }
}
