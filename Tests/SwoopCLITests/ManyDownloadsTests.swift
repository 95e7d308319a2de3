import Foundation
import SwoopTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Many downloads through the binary: the queue's limits, -i files, the crash test over 50
/// downloads, and the commands that manage the store (ls, pause, rm, resume).
@Suite("swoop with many downloads (the binary)", .timeLimit(.minutes(3)))
struct ManyDownloadsTests: CLISuite {
    let cli: CLIWorkspace

    init() async throws {
        cli = try await CLIWorkspace("swoop-many")
    }

    func transferOptions() -> [String] { ["-d", out, "--retry-wait", "0.01"] }

    /// Serves `count` files of `size` bytes at /fNNN.bin on `server`; returns their bodies by name.
    func serveMany(_ count: Int, size: Int, on server: TestServer, prefix: String = "f", throttle: Int? = nil) -> [String: [UInt8]] {
        var bodies: [String: [UInt8]] = [:]
        for i in 0..<count {
            let name = "\(prefix)\(String(format: "%03d", i)).bin"
            let body = Resource.random(size: size, seed: UInt64(i + 1) &* 7919 &+ UInt64(prefix.utf8.first ?? 0))
            server.serve("/" + name, Resource(body: body, etag: "\"\(name)\""))
            if let throttle { server.setDefault("/" + name, .throttle(bytesPerSecond: throttle)) }
            bodies[name] = body
        }
        return bodies
    }

    func writeList(_ lines: [String]) throws -> String {
        let path = root + "/list-\(UUID().uuidString).txt"
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    // MARK: - The queue's limits

    /// 200 small downloads from two hosts with -j 4 --max-per-host 3: never more than 4 at once in
    /// all, never more than 3 from one host, all 200 byte-exact.
    @Test func twoHundredDownloadsNeverExceedTheLimits() async throws {
        let second = try await TestServer.start(host: "127.0.0.2")
        defer {
            stop()
            Task { try? await second.shutdown() }
        }
        // Throttled (four paced 16 KiB pieces, ~100 ms) so that they overlap whenever the limits allow.
        let first = serveMany(100, size: 65_536, on: server, prefix: "a", throttle: 640_000)
        let other = serveMany(100, size: 65_536, on: second, prefix: "b", throttle: 640_000)
        let urls = first.keys.sorted().map { server.url("/" + $0) } + other.keys.sorted().map { second.url("/" + $0) }
        let listFile = try writeList(urls)

        let result = try await swoop("get", ["-i", listFile, "-j", "4", "--max-per-host", "3"] + transferOptions())
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderrLines.last == "swoop: 200 of 200 downloads complete")
        for (name, body) in first.merging(other, uniquingKeysWith: { a, _ in a }) {
            #expect(sha256Hex(file: out + "/" + name) == sha256Hex(body), "\(name)")
        }
        let perHost = [server.maxConcurrentResponses, second.maxConcurrentResponses]
        let overall = TestServer.maxOverlap(server.responseIntervals + second.responseIntervals)
        print("200 downloads, -j 4 --max-per-host 3: at most \(overall) at once, per host \(perHost)")
        #expect(perHost.allSatisfy { $0 <= 3 })
        #expect(overall <= 4)
        #expect(overall >= 3 && perHost.max() == 3, "the downloads should have run side by side up to the limits")
        #expect(server.requests.count == 100 && second.requests.count == 100)
    }

    // MARK: - -i files

    @Test func inputFileTakesNamesAndSkipsComments() async throws {
        defer { stop() }
        let bodies = serveMany(3, size: 5_000, on: server)
        let listFile = try writeList([
            "# a comment", "", server.url("/f000.bin") + "   renamed one.bin", "  " + server.url("/f001.bin"),
            "\t# another", server.url("/f002.bin"),
        ])
        let result = try await swoop("get", ["-i", listFile] + transferOptions())
        #expect(result.status == 0, "\(result.stderr)")
        #expect(sha256Hex(file: out + "/renamed one.bin") == sha256Hex(bodies["f000.bin"]!))
        #expect(sha256Hex(file: out + "/f001.bin") == sha256Hex(bodies["f001.bin"]!))
        #expect(sha256Hex(file: out + "/f002.bin") == sha256Hex(bodies["f002.bin"]!))
    }

    @Test func inputFromStdinAndJSONResults() async throws {
        defer { stop() }
        let bodies = serveMany(2, size: 2_000, on: server)
        let list = [server.url("/f000.bin"), server.url("/f001.bin") + " second.bin"].joined(separator: "\n")
        let command = ([SwoopBinary.path, "get", "--json", "-i", "-", "--state-dir", state] + transferOptions())
            .map { "'\($0)'" }.joined(separator: " ")
        let result = try await SwoopBinary.run(["-c", "printf '\(list)\\n' | \(command)"], in: root, executable: "/bin/sh")
        #expect(result.status == 0, "\(result.stderr)")
        let objects = result.stdoutLines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == 2)
        #expect(Set(objects.compactMap { $0["destination"] as? String }) == [out + "/f000.bin", out + "/second.bin"])
        #expect(objects.allSatisfy { $0["state"] as? String == "completed" && (($0["id"] as? String).map { $0.utf8.count == 16 && UInt64($0, radix: 16) != nil } ?? false) })
        #expect(sha256Hex(file: out + "/second.bin") == sha256Hex(bodies["f001.bin"]!))
    }

    /// A list saved in Latin-1 is refused whole, naming the line and the byte to mend.
    @Test func aListThatIsNotUTF8NamesItsFirstBadByte() async throws {
        defer { stop() }
        let listFile = root + "/latin1.txt"
        let bytes = Array("\(server.url("/a.bin"))\nhttp://h/caf".utf8) + [0xE9] + Array(".bin\n".utf8)
        try Data(bytes).write(to: URL(fileURLWithPath: listFile))
        let result = try await swoop("get", ["-i", listFile] + transferOptions())
        #expect(result.status == 2)
        #expect(result.stderrLines == [
            "swoop: error: input file \(listFile) is not UTF-8 text (line 2, byte 13: 0xE9); convert it, e.g. with `iconv -f latin1 -t utf-8`"
        ])
        #expect(server.requests.isEmpty)
    }

    @Test func aBadLineIsNamedAndSkippedAndTheRestDownload() async throws {
        defer { stop() }
        let bodies = serveMany(1, size: 100, on: server)
        let missing = server.url("/missing.bin")
        let listFile = try writeList([server.url("/f000.bin"), "# fine", "ftp://example.com/x", "not a url", "http://127.0.0.1:99999/x", missing])
        let result = try await swoop("get", ["-i", listFile] + transferOptions())
        // The exit status says something failed, the bad line first (it was reported first, before
        // the 404); the good line was downloaded all the same, and the summary counts the bad lines
        // apart from the downloads.
        #expect(result.status == 2)
        let badLine = "\(listFile):3: unsupported URL scheme 'ftp' in ftp://example.com/x: only http and https"
        // A lone word is not taken for a host without a scheme: the line is bad, and the message
        // shows how it was read.
        let notURL = "\(listFile):4: invalid URL: not (the line \"not a url\" is read as a URL, then the file name to save it as)"
        let badPort = "\(listFile):5: invalid URL (the port 99999 is not a number from 1 to 65535): http://127.0.0.1:99999/x"
        #expect(result.stderrLines == [
            "swoop: error: \(badLine)",
            "swoop: error: \(notURL)",
            "swoop: error: \(badPort)",
            // A download of the list that fails names its line too.
            "swoop: error: \(listFile):6: HTTP 404 Not Found from \(missing)",
            "swoop: error: 1 of 2 downloads complete, 1 failed; 3 lines of the list skipped:",
            "swoop: error:   \(badLine)",
            "swoop: error:   \(notURL)",
            "swoop: error:   \(badPort)",
            "swoop: error:   \(listFile):6: HTTP 404 Not Found from \(missing)",
        ])
        #expect(sha256Hex(file: out + "/f000.bin") == sha256Hex(bodies["f000.bin"]!))

        let onlyBad = try writeList(["ftp://example.com/y"])
        let none = try await swoop("get", ["-i", onlyBad] + transferOptions())
        #expect(none.status == 2)
        #expect(none.stderrLines == ["swoop: error: \(onlyBad):1: unsupported URL scheme 'ftp' in ftp://example.com/y: only http and https"])

        // All downloads done, one line skipped: the summary still says so, as an error.
        let oneBad = try writeList([server.url("/f000.bin"), "ftp://example.com/z"])
        let mostly = try await swoop("get", ["-i", oneBad] + transferOptions())
        #expect(mostly.status == 2)
        #expect(Array(mostly.stderrLines.suffix(2)) == [
            "swoop: error: 1 of 1 download complete; 1 line of the list skipped:",
            "swoop: error:   \(oneBad):2: unsupported URL scheme 'ftp' in ftp://example.com/z: only http and https",
        ])
        #expect(server.requests.count == 2)
    }

    @Test func aListThatCannotBeReadSaysWhy() async throws {
        defer { stop() }
        let result = try await swoop("get", ["-i", root + "/nofile.txt"] + transferOptions())
        #expect(result.status == 3)
        #expect(result.stderrLines == ["swoop: error: cannot read input file \(root)/nofile.txt: No such file or directory"])
        let directory = try await swoop("get", ["-i", root] + transferOptions())
        #expect(directory.status == 3)
        #expect(directory.stderrLines == ["swoop: error: cannot read input file \(root): it is a directory"])
        let empty = try writeList(["# nothing here", ""])
        let none = try await swoop("get", ["-i", empty] + transferOptions())
        #expect(none.status == 2)
        #expect(none.stderrLines == ["swoop: error: no URLs found in \(empty)"])
    }

    @Test func failuresAreSummarisedAndSetTheExitCode() async throws {
        defer { stop() }
        _ = serveMany(2, size: 1_000, on: server)
        let missing = server.url("/missing.bin")
        let result = try await swoop("get", [server.url("/f000.bin"), missing, server.url("/f001.bin")] + transferOptions())
        #expect(result.status == 5)
        #expect(result.stdoutLines.filter { $0.hasSuffix(" bytes)") }.count == 2, "\(result.stdout)")
        #expect(Array(result.stderrLines.suffix(3)) == [
            "swoop: error: HTTP 404 Not Found from \(missing)",
            "swoop: error: 2 of 3 downloads complete, 1 failed:",
            "swoop: error:   HTTP 404 Not Found from \(missing)",
        ])
    }

    // MARK: - Crash in the middle of 50 downloads

    /// SIGKILL the real process in the middle of 50 downloads, then `swoop resume`: all 50 finish
    /// byte-exact, none is fetched twice from zero, and the unfinished ones restart in their order.
    @Test func killNineInTheMiddleOfFiftyThenResumeFinishesAll() async throws {
        defer { stop() }
        let size = 2 << 20
        let bodies = serveMany(50, size: size, on: server, throttle: 4 << 20)
        let names = bodies.keys.sorted()
        let listFile = try writeList(names.map { server.url("/" + $0) })
        let seed = UInt64(Date().timeIntervalSince1970 * 1000)
        var generator = SplitMix(seed: seed)
        // Kill once between 8 and 30 files' worth of bytes were sent: some done, some partial, most waiting.
        let killAt = (8 + Int(generator.next() % 22)) * size
        print("50-download crash test seed \(seed): SIGKILL after \(killAt) bytes sent")

        let running = try start("get", ["-i", listFile, "-j", "5"] + transferOptions())
        let total = { names.reduce(0) { $0 + server.bodyBytesSent(to: "/" + $1) } }
        #expect(await eventually(timeout: .seconds(60)) { total() >= killAt }, "seed \(seed)")
        running.signal(SIGKILL)
        let killed = await running.wait()
        #expect(killed.status == SIGKILL || killed.status == 128 + SIGKILL || killed.status == 9, "seed \(seed)")

        let before = try await list()
        let unfinished = before.filter { ($0["state"] as? String) != "completed" }.compactMap { $0["url"] as? String }
        let states = Dictionary(grouping: before.compactMap { $0["state"] as? String }, by: { $0 }).mapValues(\.count)
        print("50-download crash test seed \(seed): after the kill \(states)")
        #expect(before.count == 50)
        #expect(!unfinished.isEmpty, "seed \(seed): the kill came too late")
        let sentBefore = Dictionary(uniqueKeysWithValues: names.map { ($0, server.requests(to: "/" + $0).count) })

        let resumed = try await swoop("resume", ["-j", "5", "--retry-wait", "0.01"])
        #expect(resumed.status == 0, "seed \(seed): \(resumed.stderr)")
        var resentTotal = 0
        for name in names {
            #expect(sha256Hex(file: out + "/" + name) == sha256Hex(bodies[name]!), "seed \(seed): \(name)")
            let resent = server.bodyBytesSent(to: "/" + name) - size
            resentTotal += resent
            #expect(resent <= 1 << 20, "seed \(seed): \(name) had \(resent) bytes sent twice")
        }
        print("50-download crash test seed \(seed): \(resentTotal) bytes sent twice in all")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []).sorted() == names)
        // Finished files were not touched again; the unfinished ones restarted in their saved order.
        // (One the kill caught between its rename and its record needs no request at all.)
        let resumedOrder = server.requests.dropFirst(sentBefore.values.reduce(0, +)).map(\.path)
        let resumedPaths = Set(resumedOrder)
        #expect(resumedPaths.isSubset(of: Set(unfinished.map { "/" + $0.split(separator: "/").last! })), "seed \(seed)")
        // Five start at once, so their requests may reach the server in any order, and one with little
        // left may finish and make room for the sixth before a slow-to-start one of the five asks:
        // the first five requests come from the first seven in the saved order.
        let firstFive = Array(resumedOrder.prefix(5))
        #expect(Set(firstFive).isSubset(of: Set(resumedPaths.sorted().prefix(firstFive.count + 2))), "seed \(seed): \(firstFive)")
        for name in names where !unfinished.contains(server.url("/" + name)) {
            #expect(server.requests(to: "/" + name).count == sentBefore[name], "seed \(seed): \(name) was fetched again")
        }
        let after = try await list()
        #expect(after.count == 50 && after.allSatisfy { ($0["state"] as? String) == "completed" })
    }

    // MARK: - ls, pause, rm, resume

    @Test func lsListsTheStoreAsTableAndJSON() async throws {
        defer { stop() }
        let empty = try await swoop("ls", [])
        #expect(empty.status == 0 && empty.stdoutLines == ["no downloads"])
        // Looking makes no state directory (a mistyped --state-dir is not left behind).
        #expect(try await swoop("ls", ["--orphans"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: state))
        let bodies = serveMany(2, size: 3_000, on: server)
        let got = try await swoop("get", [server.url("/f000.bin"), server.url("/f001.bin")] + transferOptions())
        #expect(got.status == 0, "\(got.stderr)")

        let table = try await swoop("ls", [])
        #expect(table.status == 0)
        #expect(table.stdoutLines.count == 3)
        #expect(table.stdoutLines.first?.hasPrefix("ID  ") == true || table.stdoutLines.first?.hasPrefix("ID ") == true)
        for name in bodies.keys {
            #expect(table.stdoutLines.contains { $0.contains("completed") && $0.contains("100.0%") && $0.hasSuffix(out + "/" + name) })
        }
        let json = try await list()
        #expect(json.count == 2)
        #expect(Set(json.compactMap { $0["destination"] as? String }) == Set(bodies.keys.map { out + "/" + $0 }))
        #expect(json.allSatisfy { $0["completedBytes"] as? Int == 3_000 && $0["totalBytes"] as? Int == 3_000 })

        let filtered = try await swoop("ls", ["--state", "failed,paused"])
        #expect(filtered.stdoutLines == ["no downloads"])
        let bad = try await swoop("ls", ["--state", "sleeping"])
        #expect(bad.status == 2)
        #expect(bad.stderrLines == ["swoop: error: unknown state 'sleeping': use waiting, active, paused, interrupted, completed, failed, removed"])
    }

    /// `swoop resume -H` replaces a stored header of the same name (a fresh token), once, and keeps
    /// the others.
    @Test func resumeHeadersReplaceStoredOnesOfTheSameName() async throws {
        defer { stop() }
        let body = Resource.random(size: 1_000_000, seed: 5)
        server.serve("/h.bin", Resource(body: body, etag: "\"h\""))
        server.enqueue("/h.bin", .stallAfter(bytes: 300_000))
        let running = try start("get", ["-H", "X-Token: old", "-H", "X-Keep: yes", server.url("/h.bin")] + transferOptions())
        #expect(await eventually { fileSize(out + "/h.bin.swoop") == 300_000 })
        running.signal(SIGINT)
        #expect(await running.wait().status == 130)

        let resumed = try await swoop("resume", ["-H", "x-token: new", "--retry-wait", "0.01"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(sha256Hex(file: out + "/h.bin") == sha256Hex(body))
        let last = try #require(server.requests(to: "/h.bin").last)
        #expect(last.header("Range") == "bytes=300000-")
        #expect(last.headers.filter { $0.name.lowercased() == "x-token" }.map(\.value) == ["new"])
        #expect(last.header("X-Keep") == "yes")
    }

    /// `swoop pause` of a download waiting in another process's queue: that process skips it.
    @Test func pausingAWaitingDownloadOfAnotherProcessSkipsIt() async throws {
        defer { stop() }
        let bodies = serveMany(3, size: 400_000, on: server)
        // The first download crawls (about 8 s) so that the `pause` below, two process launches away,
        // lands while the third still waits even on a loaded machine; the wait is measured at the
        // server, which a busy test process cannot miss.
        server.setDefault("/f000.bin", .throttle(bytesPerSecond: 50_000))
        let running = try start("get", ["-j", "1", server.url("/f000.bin"), server.url("/f001.bin"), server.url("/f002.bin")] + transferOptions())
        #expect(await eventually { server.bodyBytesSent(to: "/f000.bin") >= 20_000 })
        let listing = try await list()
        let third = try #require(listing.first { ($0["url"] as? String) == server.url("/f002.bin") }?["id"] as? String)
        let pause = try await swoop("pause", [third])
        #expect(pause.status == 0, "\(pause.stderr)")
        #expect(pause.stdoutLines == ["paused \(third.prefix(8)) \(server.url("/f002.bin"))"])

        // The first download finishes, the second runs, the third is skipped.
        let result = await running.wait(timeout: .seconds(60))
        #expect(result.status == 8, "\(result.stderr)")
        #expect(result.stderrLines.contains("swoop: \(server.url("/f002.bin")) was paused; `swoop resume --state-dir \(state) \(third.prefix(8))` continues it"))
        #expect(sha256Hex(file: out + "/f001.bin") == sha256Hex(bodies["f001.bin"]!))
        #expect(server.requests(to: "/f002.bin").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: out + "/f002.bin"))

        // Paused stays paused until named (or --all).
        let bare = try await swoop("resume", [])
        #expect(bare.stderrLines == ["swoop: nothing to resume; 1 paused (`swoop resume ID` or `--all` continues it)"])
        let resumed = try await swoop("resume", ["--all", "--retry-wait", "0.01"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(sha256Hex(file: out + "/f002.bin") == sha256Hex(bodies["f002.bin"]!))
    }

    @Test func failedDownloadsComeBackOnlyWhenAskedAndCanBeListedAndCleared() async throws {
        defer { stop() }
        let bodies = serveMany(1, size: 2_000, on: server)
        let missing = server.url("/missing.bin")
        let first = try await swoop("get", [server.url("/f000.bin"), missing, "--retries", "0"] + transferOptions())
        #expect(first.status == 5)

        // A bare resume leaves the failed download alone and says how to retry it.
        let bare = try await swoop("resume", [])
        #expect(bare.status == 0)
        #expect(bare.stderrLines == ["swoop: nothing to resume; 1 failed (`swoop resume --failed` retries it)"])
        #expect(server.requests(to: "/missing.bin").count == 1)

        // `ls ID` shows the error in full.
        let failedID = try #require(try await list().first { $0["state"] as? String == "failed" }?["id"] as? String)
        let details = try await swoop("ls", [String(failedID.prefix(8))])
        #expect(details.status == 0)
        #expect(details.stdoutLines.contains("error:  HTTP 404 Not Found from \(missing)"))
        #expect(details.stdoutLines.first == "id:     \(failedID)")

        let retried = try await swoop("resume", ["--failed", "--retries", "0"])
        #expect(retried.status == 5)
        #expect(server.requests(to: "/missing.bin").count == 2)

        // rm --failed and --completed clear the lists; the finished file stays.
        let purged = try await swoop("rm", ["--failed"])
        #expect(purged.status == 0)
        #expect(purged.stdoutLines == ["removed \(failedID.prefix(8)) \(missing)"])
        let cleared = try await swoop("rm", ["--completed"])
        #expect(cleared.status == 0)
        #expect(try await list().isEmpty)
        #expect(sha256Hex(file: out + "/f000.bin") == sha256Hex(bodies["f000.bin"]!))
        let nothing = try await swoop("rm", ["--failed"])
        #expect(nothing.status == 0 && nothing.stderrLines == ["swoop: nothing to remove"])
    }
}
