import Foundation
import SwoopTesting
import Testing

/// Downloads keep their settings, and `pause`, `rm` and `limit` reach a download another swoop
/// process is transferring (issue 10, points 2 and 3).
@Suite("swoop pause, rm and limit across processes; stored settings (the binary)")
struct ControlAcrossProcessesTests: CLISuite {
    let cli: CLIWorkspace

    init() async throws {
        cli = try await CLIWorkspace("swoop-control")
    }

    /// Starts `swoop get` of a path whose answer stalls after `bytes`, and returns it once that
    /// many bytes are in the part file, with the download's id prefix.
    func startStalled(_ name: String, size: Int, after bytes: Int, _ options: [String] = []) async throws -> (SwoopBinary.Running, String, [UInt8]) {
        let body = Resource.random(size: size, seed: UInt64(size))
        server.serve("/" + name, Resource(body: body, etag: "\"\(name)\""))
        server.enqueue("/" + name, .stallAfter(bytes: bytes))
        let running = try start("get", ["-d", out, "--retry-wait", "0.01"] + options + [server.url("/" + name)])
        #expect(await eventually { fileSize(out + "/\(name).swoop") == bytes && server.requests(to: "/" + name).count == 1 })
        let id = try #require(try await list().first { $0["url"] as? String == server.url("/" + name) }?["id"] as? String)
        return (running, String(id.prefix(8)), body)
    }

    /// While one process downloads (its connection stalled, so no byte wakes it): `limit` changes its
    /// rate there and stores it, `pause` stops it and reports it (long before the stalled connection's
    /// 60 s idle timeout could have ended the transfer: the pause woke it), that process
    /// says so and ends, a bare `resume` leaves the paused download alone and says how to continue
    /// it, and `resume ID` finishes it byte-exact from where it stopped.
    @Test func pauseAndLimitReachTheProcessThatRunsTheDownload() async throws {
        defer { stop() }
        let (running, prefix, body) = try await startStalled("slow.bin", size: 3_000_000, after: 1_000_000)
        let url = server.url("/slow.bin")

        let limit = try await swoop("limit", [prefix, "50M"])
        #expect(limit.status == 0, "\(limit.stderr)")
        #expect(limit.stdoutLines == ["limited \(prefix) \(url) to 50.0 MiB/s"])
        let limited = try await swoop("ls", [prefix])
        #expect(limited.stdoutLines.contains("options: limit-rate 50.0 MiB/s, retry-wait 0.01s"), "\(limited.stdout)")

        let started = ContinuousClock.now
        let pause = try await swoop("pause", [prefix])
        let took = ContinuousClock.now - started
        #expect(pause.status == 0, "\(pause.stderr)")
        #expect(pause.stdoutLines == ["paused \(prefix) \(url)"])
        // Not a timing figure (those are benchmarks'): an order. The stall ends only with the idle
        // timeout, so a pause that waited for a byte or for that timeout would take 60 s or more.
        #expect(took < .seconds(30), "pause took \(took)")
        #expect(try await list().first?["state"] as? String == "paused")
        let owner = await running.wait()
        #expect(owner.status == 8, "\(owner.stderr)")
        #expect(owner.stderrLines.last == "swoop: \(url) was paused; `swoop resume --state-dir \(state) \(prefix)` continues it")
        #expect(owner.stderrLines.contains("swoop: rate limit of \(url) now 50.0 MiB/s (changed by another swoop)"))

        let nothing = try await swoop("resume", [])
        #expect(nothing.status == 0)
        #expect(nothing.stderrLines == ["swoop: nothing to resume; 1 paused (`swoop resume ID` or `--all` continues it)"])

        let resumed = try await swoop("resume", [prefix, "--retry-wait", "0.01"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdoutLines.last?.hasPrefix("\(out)/slow.bin (2.86 MiB, 3000000 bytes)") == true)
        #expect(sha256Hex(file: out + "/slow.bin") == sha256Hex(body))
        #expect(server.requests(to: "/slow.bin").last?.header("Range") == "bytes=1000000-")
    }

    /// `rm --delete-file` of a download another process transfers: that process stops it, the
    /// record and the part file are gone, and it says so; unknown ids stay a usage error.
    @Test func removeReachesTheProcessThatRunsTheDownload() async throws {
        defer { stop() }
        let (running, prefix, _) = try await startStalled("rm.bin", size: 2_000_000, after: 500_000)
        let url = server.url("/rm.bin")

        let removed = try await swoop("rm", [prefix, "--delete-file"])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(removed.stdoutLines == ["removed \(prefix) \(url) (and its file)"])
        #expect(try await list().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: out + "/rm.bin.swoop"))
        let owner = await running.wait()
        #expect(owner.status == 8, "\(owner.stderr)")
        #expect(owner.stderrLines.last == "swoop: \(url) was removed")

        let unknown = try await swoop("pause", ["ffffffff"])
        #expect(unknown.status == 2)
        #expect(unknown.stderrLines == ["swoop: error: no download with id ffffffff (see `swoop ls`)"])
    }

    /// `rm` without `--delete-file` keeps the part file and says where it is: with the download
    /// forgotten, `ls --orphans` no longer looks in its directory.
    /// `pause`, `rm`, `limit`, `resume` and `ls` of ids in a state directory with no database (a
    /// mistyped --state-dir) say so and make nothing there; `rm --failed`, a bare `resume` and a
    /// bare `ls` find nothing to do and say why, so that a typo does not read as an empty queue.
    /// Each but `ls` once made the directory, its database and its locks.
    @Test func commandsOnAStateDirectoryWithNoDatabaseMakeNothing() async throws {
        defer { stop() }
        let commands: [(String, [String], String)] = [
            ("pause", ["0123abcd"], "swoop: error: no downloads in \(state): it has no state database"),
            ("rm", ["0123abcd"], "swoop: error: no downloads in \(state): it has no state database"),
            ("limit", ["0123abcd", "1M"], "swoop: error: no downloads in \(state): it has no state database"),
            ("resume", ["0123abcd"], "swoop: error: no download with id 0123abcd: \(state) has no state database"),
            ("rm", ["--failed"], "swoop: nothing to remove: \(state) has no state database"),
            ("resume", [], "swoop: nothing to resume: \(state) has no state database"),
            ("ls", ["0123abcd"], "swoop: error: no download with id 0123abcd: \(state) has no state database"),
            ("ls", [], "swoop: \(state) has no state database"),
        ]
        for (command, arguments, line) in commands {
            let result = try await swoop(command, arguments)
            #expect(result.status == (line.contains("error") ? 2 : 0), "\(command) \(arguments): \(result.stderr)")
            #expect(result.stderrLines == [line], "\(command) \(arguments)")
            #expect(!FileManager.default.fileExists(atPath: state), "\(command) \(arguments) made \(state)")
        }
    }

    @Test func removeWithoutDeleteFileSaysWhereThePartFileStays() async throws {
        defer { stop() }
        let (running, prefix, _) = try await startStalled("kept.bin", size: 2_000_000, after: 500_000)
        let url = server.url("/kept.bin")
        let removed = try await swoop("rm", [prefix])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(removed.stdoutLines == ["removed \(prefix) \(url)"])
        #expect(removed.stderrLines == ["swoop: kept \(out)/kept.bin.swoop: the download is forgotten, not its bytes (`rm --delete-file` deletes them too)"])
        #expect(FileManager.default.fileExists(atPath: out + "/kept.bin.swoop"))
        _ = await running.wait()
    }

    /// Options given to `get` are stored with the download: after Ctrl-C it is `interrupted` (not
    /// paused), `ls ID` shows its options, and a bare `resume` continues it with them (two
    /// connections, 1 MiB segments: its first request asks for the first MiB; its header). Options
    /// given to `resume` replace the stored ones and are stored.
    @Test func ctrlCInterruptsAndABareResumeContinuesWithTheStoredSettings() async throws {
        defer { stop() }
        // Interrupted while it waits to retry a 503, before any byte: the resume starts afresh.
        let body = Resource.random(size: 4_000_000, seed: 4)
        server.serve("/kept.bin", Resource(body: body, etag: "\"kept\""))
        server.enqueue("/kept.bin", .status(503, headers: [("Retry-After", "30")]))
        let options = ["-x", "2", "--min-split-size", "1M", "--timeout", "33", "-H", "X-Keep: yes"]
        let running = try start("get", ["-d", out, "--retry-wait", "0.01"] + options + [server.url("/kept.bin")])
        #expect(await eventually { server.requests(to: "/kept.bin").count == 1 })
        let id = try #require(try await list().first?["id"] as? String)
        let prefix = String(id.prefix(8))
        running.signal(SIGINT)
        #expect(await running.wait().status == 130)
        #expect(try await list().first?["state"] as? String == "interrupted")
        let details = try await swoop("ls", [prefix])
        #expect(details.stdoutLines.contains("state:  interrupted"))
        #expect(details.stdoutLines.contains("options: connections 2, min-split-size 1.00 MiB, retry-wait 0.01s, timeout 33s, header X-Keep"))

        let before = server.requests(to: "/kept.bin").count
        let resumed = try await swoop("resume", ["--timeout", "44", "--limit-rate", "0"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(sha256Hex(file: out + "/kept.bin") == sha256Hex(body))
        let after = Array(server.requests(to: "/kept.bin").dropFirst(before))
        #expect(after.first?.header("Range") == "bytes=0-1048575")
        #expect(after.count >= 2)
        #expect(after.allSatisfy { $0.header("X-Keep") == "yes" })
        let stored = try await swoop("ls", [prefix])
        #expect(stored.stdoutLines.contains("options: connections 2, min-split-size 1.00 MiB, limit-rate none, retry-wait 0.01s, timeout 44s, header X-Keep"))
    }

    /// The hint after Ctrl-C names the state directory it was given, quoted for the shell: a bare
    /// `swoop resume` would look in the default one.
    @Test func theResumeHintNamesTheStateDirectoryQuotedForTheShell() async throws {
        defer { stop() }
        let odd = root + "/my state's"
        let body = Resource.random(size: 1_000_000, seed: 21)
        server.serve("/odd.bin", Resource(body: body, etag: "\"odd\""))
        server.enqueue("/odd.bin", .stallAfter(bytes: 200_000))
        let running = try SwoopBinary.Running(["get", "--state-dir", odd, "-d", out, server.url("/odd.bin")], directory: root)
        #expect(await eventually { fileSize(out + "/odd.bin.swoop") == 200_000 })
        running.signal(SIGINT)
        let result = await running.wait()
        #expect(result.status == 130)
        let line = try #require(result.stderrLines.last)
        let quoted = "'\(root)/my state'\\''s'"
        #expect(line == "swoop: interrupted; progress saved. Run `swoop resume --state-dir \(quoted)` (or the same command) to continue.")
        // The shell reads the quoted word back as the directory.
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", "printf '%s' \(quoted)"]
        let output = Pipe()
        shell.standardOutput = output
        try shell.run()
        let echoed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        shell.waitUntilExit()
        #expect(echoed == odd)
    }

    /// `rm` of a small file never named (its claim waits for its first checkpoint, and kill -9
    /// came first) says where its part file stays, as it does for a named one: it went unsaid.
    @Test func removeOfANeverNamedSmallFileSaysWhereItsPartFileStays() async throws {
        defer { stop() }
        let (running, prefix, _) = try await startStalled("small.bin", size: 500_000, after: 200_000)
        running.signal(SIGKILL)
        _ = await running.wait()
        let listed = try #require(try await list().first)
        #expect(listed["destination"] == nil || listed["destination"] is NSNull, "\(listed)")
        let removed = try await swoop("rm", [prefix])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(removed.stderrLines.last == "swoop: kept \(out)/small.bin.swoop: the download is forgotten, not its bytes (`rm --delete-file` deletes them too)")
        #expect(fileSize(out + "/small.bin.swoop") == 200_000)
    }

    /// A quiet `get` whose download another command pauses exits 8 with one line saying why (-q
    /// hid the download's own line, and the status was left to say it alone).
    @Test func aQuietGetSaysWhyItExitsEight() async throws {
        defer { stop() }
        let (running, prefix, _) = try await startStalled("quiet.bin", size: 2_000_000, after: 300_000, ["-q"])
        #expect(try await swoop("pause", [prefix]).status == 0)
        let result = await running.wait()
        #expect(result.status == 8)
        #expect(result.stderrLines == ["swoop: warning: 1 download was paused or removed by another command"])
    }

    /// One Ctrl-C delivered twice at once (`timeout -s INT` signals the process and its group) is
    /// one Ctrl-C: the download is saved `interrupted`, not left `active` by an exit at once.
    @Test func aSignalDeliveredTwiceAtOnceStillSavesTheDownload() async throws {
        defer { stop() }
        let (running, _, _) = try await startStalled("twice.bin", size: 2_000_000, after: 400_000)
        running.signal(SIGINT)
        running.signal(SIGINT)
        let result = await running.wait()
        #expect(result.status == 130)
        #expect(result.stderrLines.last == "swoop: interrupted; progress saved. Run `swoop resume --state-dir \(state)` (or the same command) to continue.")
        #expect(try await list().first?["state"] as? String == "interrupted")
    }

    /// With --json (which takes no `started` event for its lines) a Ctrl-C during a transfer still
    /// says its progress was saved.
    @Test func ctrlCWithJSONOutputSaysProgressSaved() async throws {
        defer { stop() }
        let (running, _, _) = try await startStalled("json.bin", size: 2_000_000, after: 400_000, ["--json"])
        running.signal(SIGINT)
        let result = await running.wait()
        #expect(result.status == 130)
        #expect(result.stderrLines.last == "swoop: interrupted; progress saved. Run `swoop resume --state-dir \(state)` (or the same command) to continue.", "\(result.stderr)")
    }

    /// A second Ctrl-C while the first one's save still waits (here for another process's write to
    /// the store) exits at once, and says so: the shell's prompt came back with no word. The same
    /// command then continues byte-exact.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
    func aSecondCtrlCStopsAtOnceAndSaysSo() async throws {
        defer { stop() }
        let (running, _, body) = try await startStalled("again.bin", size: 2_000_000, after: 300_000)
        let holder = try SwoopBinary.Running(
            ["-c", "import sqlite3, sys, time\nc = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)\nc.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\ntime.sleep(30)", state + "/swoop.sqlite"],
            directory: root, executable: "/usr/bin/python3"
        )
        defer { holder.signal(SIGKILL) }
        #expect(await eventually { (try? String(contentsOf: holder.out, encoding: .utf8))?.contains("locked") == true })
        running.signal(SIGINT)
        // Longer than the quarter second within which a second signal is the same Ctrl-C delivered twice.
        try await Task.sleep(for: .milliseconds(400))
        running.signal(SIGINT)
        let result = await running.wait(timeout: .seconds(5))
        #expect(result.status == 130)
        #expect(result.stderrLines.last == "swoop: stopped at once by Ctrl-C during the shutdown. Run `swoop resume --state-dir \(state)` (or the same command) to continue.")
        holder.signal(SIGKILL)
        _ = await holder.wait()
        let again = try await swoop("get", ["-d", out, "--retry-wait", "0.01", server.url("/again.bin")])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(sha256Hex(file: out + "/again.bin") == sha256Hex(body))
    }

    /// `ls` shows a download whose process holds its lock as active, and one whose process died
    /// (kill -9 leaves the record `active`) as interrupted, as the next resume will treat it.
    @Test func lsTellsARunningDownloadFromOneWhoseProcessDied() async throws {
        let (running, prefix, body) = try await startStalled("dead.bin", size: 2_000_000, after: 300_000)
        defer { stop() }
        #expect(try await list().first?["state"] as? String == "active")
        running.signal(SIGKILL)
        _ = await running.wait()
        #expect(try await list().first?["state"] as? String == "interrupted")
        #expect(try await swoop("ls", [prefix]).stdoutLines.contains("state:  interrupted"))
        let resumed = try await swoop("resume", ["--retry-wait", "0.01"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(sha256Hex(file: out + "/dead.bin") == sha256Hex(body))
    }
}
