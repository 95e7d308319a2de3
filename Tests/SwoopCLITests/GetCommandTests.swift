import Foundation
import SwoopTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `swoop get` run as a user runs it: the built binary, its exit code and the lines it prints.
@Suite("swoop get (the binary)", .timeLimit(.minutes(2)))
struct GetCommandTests: CLISuite {
    let cli: CLIWorkspace

    init() async throws {
        cli = try await CLIWorkspace("swoop-cli")
    }

    func start(_ arguments: [String]) throws -> SwoopBinary.Running {
        try start("get", ["-d", out, "--retry-wait", "0.01"] + arguments)
    }

    func files() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []).sorted() }

    func digest(_ path: String) -> String? { sha256Hex(file: path) }

    func digest(_ bytes: [UInt8]) -> String { sha256Hex(bytes) }

    @Test func successPrintsThePathAndSize() async throws {
        defer { stop() }
        let body = serve("/file.bin", size: 123_456)
        let result = try await get([server.url("/file.bin")])
        #expect(result.status == 0)
        #expect(result.stdoutLines.last?.hasPrefix("\(out)/file.bin (121 KiB, 123456 bytes)") == true)
        #expect(result.stderr.isEmpty)
        #expect(digest(out + "/file.bin") == digest(body))

        let again = try await get([server.url("/file.bin")])
        #expect(again.status == 0)
        #expect(again.stdoutLines.last == "\(out)/file.bin is already complete (121 KiB, 123456 bytes)")
        #expect(server.requests(to: "/file.bin").count == 1)
    }

    /// A run stopped between recording a download complete and renaming its part file: the next
    /// `swoop get` renames it at start, says so, and asks the server for nothing.
    @Test func theNextRunRenamesACompletedPartFileAndSaysSo() async throws {
        defer { stop() }
        let body = serve("/late.bin", size: 50_000)
        #expect(try await get([server.url("/late.bin")]).status == 0)
        // As a crash after the record and before the rename leaves it (a rename keeps the mtime).
        #expect(rename(out + "/late.bin", out + "/late.bin.swoop") == 0)

        let again = try await get([server.url("/late.bin")])
        #expect(again.status == 0)
        #expect(again.stderrLines.contains("swoop: renamed 1 completed download that an earlier run stopped before renaming"))
        #expect(again.stdoutLines.last == "\(out)/late.bin is already complete (48.8 KiB, 50000 bytes)")
        #expect(files() == ["late.bin"])
        #expect(digest(out + "/late.bin") == digest(body))
        #expect(server.requests(to: "/late.bin").count == 1)
    }

    @Test func quietPrintsNothingOnSuccess() async throws {
        defer { stop() }
        _ = serve("/q.bin", size: 1000)
        let result = try await get(["-q", server.url("/q.bin")])
        #expect(result.status == 0)
        #expect(result.stdout.isEmpty && result.stderr.isEmpty)
    }

    /// A header name NIO would trap on (exit 132 before) is a usage error naming it.
    @Test func aHeaderThatCannotBeSentIsExitTwoNamingIt() async throws {
        defer { stop() }
        let result = try await get(["-H", "é: x", server.url("/h.bin")])
        #expect(result.status == 2)
        #expect(result.stderrLines == ["swoop: error: invalid header 'é: x': a header name cannot have 'é'"])
        #expect(server.requests.isEmpty)
    }

    /// A one-character name: Foundation's `deletingLastPathComponent` trapped on it (exit 132).
    @Test(arguments: ["a", "é"])
    func aOneCharacterOutputNameIsSavedUnderIt(name: String) async throws {
        defer { stop() }
        let body = serve("/one.bin", size: 1000)
        let result = try await get(["-q", "-o", name, server.url("/one.bin")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(digest(out + "/" + name) == digest(body))
    }

    @Test(arguments: [
        ("ftp://example.com/x", "swoop: error: unsupported URL scheme 'ftp' in ftp://example.com/x: only http and https"),
        ("http://", "swoop: error: invalid URL (no host): http://"),
        ("::nonsense", "swoop: error: invalid URL: ::nonsense"),
        ("http://127.0.0.1:99999/x", "swoop: error: invalid URL (the port 99999 is not a number from 1 to 65535): http://127.0.0.1:99999/x"),
    ])
    func badURLIsExitTwoWithOneLineAndNothingCreated(url: String, line: String) async throws {
        defer { stop() }
        let result = try await get([url])
        #expect(result.status == 2)
        #expect(result.stderrLines == [line])
        #expect(result.stdout.isEmpty)
        #expect(files().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: state))
        #expect(server.requests.isEmpty)
    }

    @Test(arguments: [
        (["-o", "x", "http://127.0.0.1:9/a", "http://127.0.0.1:9/b"], "-o/--output takes one URL"),
        (["--timeout", "1e17", "http://127.0.0.1:9/a"], "timeouts and waits must be more than 0"),
        (["--retry-wait", "0", "http://127.0.0.1:9/a"], "timeouts and waits must be more than 0"),
        (["--max-redirects=-1", "http://127.0.0.1:9/a"], "--max-redirects must be between 0 and 100"),
        (["--checksum", "sha-256=zz", "http://127.0.0.1:9/a"], "invalid sha-256 digest 'zz'"),
        (["-H", "no colon", "http://127.0.0.1:9/a"], "invalid header 'no colon'"),
        (["--overwrite", "--no-clobber", "http://127.0.0.1:9/a"], "contradict"),
        // A negative number is a value, named by its range, not "Missing value".
        // `-o DIR` saved DIR.1 beside it (relative to -d, `..` is the test's own directory).
        (["-o", "..", "http://127.0.0.1:9/a"], "-o/--output names a directory (..): give a file name, or -d .. to save into it"),
        (["-o", "new/", "http://127.0.0.1:9/a"], "-o/--output names a directory (new/): give a file name, or -d new/ to save into it"),
        (["-j", "-1", "http://127.0.0.1:9/a"], "-j/--max-concurrent must be between 1 and 10000"),
        (["-x", "-2", "http://127.0.0.1:9/a"], "-x/--connections must be between 1 and 64"),
        (["--timeout", "-5", "http://127.0.0.1:9/a"], "timeouts and waits must be more than 0"),
    ])
    func usageErrorsAreExitTwo(arguments: [String], message: String) async throws {
        defer { stop() }
        let result = try await get(arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
        // One error style, the argument parser's errors included; its usage line follows.
        #expect(result.stderrLines.first?.hasPrefix("swoop: error: ") == true, "\(result.stderr)")
        #expect(!result.stderr.contains("Error: "))
        #expect(result.stdout.isEmpty)
        #expect(files().isEmpty)
    }

    @Test func noClobberRefusesATakenNameWithTheOptionThatWouldReplaceIt() async throws {
        defer { stop() }
        _ = serve("/taken.bin", size: 10_000)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: out + "/taken.bin"))
        let result = try await get(["--no-clobber", server.url("/taken.bin")])
        #expect(result.status == 3)
        #expect(result.stderrLines == ["swoop: error: \(out)/taken.bin already exists (use --overwrite to replace it)"])
        #expect(try String(contentsOfFile: out + "/taken.bin", encoding: .utf8) == "mine")
        #expect(files() == ["taken.bin"])
    }

    @Test func aStateDirectoryThatCannotBeMadeIsOneLineNamingIt() async throws {
        defer { stop() }
        try Data().write(to: URL(fileURLWithPath: root + "/plain-file"))
        let bad = root + "/plain-file/state"
        let result = try await SwoopBinary.run(["get", "--state-dir", bad, "-d", out, server.url("/x.bin")], in: root)
        #expect(result.status == 3)
        #expect(result.stderrLines == ["swoop: error: cannot use state directory \(bad): \(root)/plain-file is not a directory"])
        #expect(server.requests.isEmpty)
    }

    @Test func orphanedPartFilesAreListedByLsNotAnnouncedByEveryGet() async throws {
        defer { stop() }
        _ = serve("/first.bin", size: 1_000)
        _ = serve("/second.bin", size: 1_000)
        #expect(try await get([server.url("/first.bin")]).status == 0)
        let none = try await swoop("ls", ["--orphans"])
        #expect(none.stdoutLines == ["no orphaned part files in the download directories Swoop knows"])
        try Data(count: 10).write(to: URL(fileURLWithPath: out + "/left.bin.swoop"))
        let second = try await get([server.url("/second.bin")])
        #expect(second.status == 0)
        #expect(second.stderr.isEmpty, "\(second.stderr)")
        let listed = try await swoop("ls", ["--orphans"])
        #expect(listed.status == 0)
        #expect(listed.stdoutLines == [out + "/left.bin.swoop"])
        let json = try await swoop("ls", ["--orphans", "--json"])
        #expect(json.stdoutLines == ["[\"\(out)/left.bin.swoop\"]"])
    }

    @Test func notFoundIsExitFiveWithTheStatus() async throws {
        defer { stop() }
        server.setDefault("/missing.bin", .status(404, body: "nope"))
        let result = try await get([server.url("/missing.bin")])
        #expect(result.status == 5)
        #expect(result.stderrLines == ["swoop: error: HTTP 404 Not Found from \(server.url("/missing.bin"))"])
        #expect(files().isEmpty)
    }

    @Test func connectionRefusedIsExitFourWithOneLine() async throws {
        defer { stop() }
        // Bound, not listening: refused, and no other test's server can take the port meanwhile.
        let refusing = try TestPort(listening: false)
        let closed = refusing.url("/x")
        let result = try await get(["--retries", "1", closed])
        withExtendedLifetime(refusing) {}
        #expect(result.status == 4)
        #expect(result.stderrLines.last == "swoop: error: cannot connect to \(closed): Connection refused")
        #expect(files().isEmpty)
    }

    @Test func aMissingDirectoryIsMadeAndOneUnderAFileIsExitThreeNamingIt() async throws {
        defer { stop() }
        let body = serve("/a.bin", size: 10)
        let made = try await SwoopBinary.run(["get", "--state-dir", state, "-d", out + "/missing/deeper", server.url("/a.bin")], in: root)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(digest(out + "/missing/deeper/a.bin") == digest(body))

        try Data().write(to: URL(fileURLWithPath: out + "/file"))
        let refused = try await SwoopBinary.run(["get", "--state-dir", state, "-d", out + "/file/sub", server.url("/a.bin")], in: root)
        #expect(refused.status == 3)
        #expect(refused.stderrLines == ["swoop: error: cannot use directory \(out)/file/sub: \(out)/file is not a directory"])
        #expect(server.requests.count == 1)

        let onAFile = try await SwoopBinary.run(["get", "--state-dir", state, "-d", out + "/file", server.url("/a.bin")], in: root)
        #expect(onAFile.status == 3)
        #expect(onAFile.stderrLines == ["swoop: error: cannot use directory \(out)/file: it is not a directory"])
        // The directory of `-o` says it alike (it was "not a directory" there).
        let underAFile = try await SwoopBinary.run(["get", "--state-dir", state, "-o", out + "/file/x.bin", server.url("/a.bin")], in: root)
        #expect(underAFile.status == 3)
        #expect(underAFile.stderrLines == ["swoop: error: cannot use directory \(out)/file: it is not a directory"])

        // /proc takes no new directories: mkdir fails, and the message says creating it failed.
        let uncreatable = try await SwoopBinary.run(["get", "--state-dir", state, "-d", "/proc/swoop-x/y", server.url("/a.bin")], in: root)
        #expect(uncreatable.status == 3)
        #expect(uncreatable.stderrLines == ["swoop: error: cannot create directory /proc/swoop-x/y: /proc/swoop-x: No such file or directory"])
        let uncreatableItself = try await SwoopBinary.run(["get", "--state-dir", state, "-d", "/proc/swoop-x", server.url("/a.bin")], in: root)
        #expect(uncreatableItself.stderrLines == ["swoop: error: cannot create directory /proc/swoop-x: No such file or directory"])
        #expect(server.requests.count == 1)
    }

    @Test(arguments: [("bash", "-F _swoop swoop"), ("zsh", "#compdef swoop"), ("fish", "complete -c 'swoop'")])
    func shellCompletionsNameTheSubcommandsAndOptions(shell: String, marker: String) async throws {
        defer { stop() }
        let result = try await SwoopBinary.run(["--generate-completion-script", shell], in: root)
        #expect(result.status == 0)
        #expect(result.stdout.contains(marker))
        #expect(["get", "resume", "limit-rate", "no-clobber"].allSatisfy { result.stdout.contains($0) })
    }

    /// A command line naming a subcommand is parsed by that subcommand alone (quicker); help, usage
    /// and mistakes still name `swoop`, as ArgumentParser's root parse words them.
    @Test func helpAndUsageNameSwoopWhicheverWayTheLineIsParsed() async throws {
        defer { stop() }
        let root = try await SwoopBinary.run(["--help"], in: self.root)
        #expect(root.status == 0)
        #expect(root.stdout.contains("USAGE: swoop <subcommand>"))
        #expect(root.stdout.contains("get (default)"))
        for arguments in [["get", "--help"], ["get", "-h"], ["help", "get"]] {
            let help = try await SwoopBinary.run(arguments, in: self.root)
            #expect(help.status == 0, "\(arguments)")
            #expect(help.stdout.contains("USAGE: swoop get [<options>] [<urls> ...]"), "\(arguments)")
        }
        // `ls --help` names the states --state takes.
        let ls = try await SwoopBinary.run(["ls", "--help"], in: self.root)
        #expect(ls.status == 0)
        #expect(ls.stdout.replacingOccurrences(of: "\n", with: " ").split(separator: " ").joined(separator: " ")
            .contains("(comma-separated): waiting, active, paused, interrupted, completed, failed, removed."), "\(ls.stdout)")
        let bare = try await SwoopBinary.run([], in: self.root)
        #expect(bare.status == 2)
        #expect(bare.stderrLines == [
            "swoop: error: give at least one URL, or -i FILE, or --metalink FILE", "  See 'swoop --help' for more information.",
        ])
        // A mistyped option on a line with no URL is named, not taken for a missing URL.
        let mistyped = try await SwoopBinary.run(["--bogus"], in: self.root)
        #expect(mistyped.status == 2)
        #expect(mistyped.stderrLines.first == "swoop: error: Unknown option '--bogus'")
        // curl's habit, `-O URL`: -O takes a file name here, and took the URL.
        let curlO = try await SwoopBinary.run(["get", "-O", "http://127.0.0.1:9/x.bin"], in: self.root)
        #expect(curlO.status == 2)
        #expect(curlO.stderrLines.first == "swoop: error: -o/-O takes a file name (as wget's -O), and took http://127.0.0.1:9/x.bin; curl's -O is what Swoop does by default: `swoop get URL`")
        let unknown = try await SwoopBinary.run(["help", "nope"], in: self.root)
        #expect(unknown.status == 2)
        #expect(unknown.stderrLines == ["swoop: error: no command 'nope'; `swoop --help` lists them"])
        #expect(unknown.stdout.isEmpty)
        let version = try await SwoopBinary.run(["get", "--version"], in: self.root)
        #expect(version.status == 0)
        #expect(version.stdoutLines.count == 1)
        let bad = try await SwoopBinary.run(["get", "--no-such-option", "http://127.0.0.1:9/x"], in: self.root)
        #expect(bad.status == 2)
        #expect(bad.stderrLines.first == "swoop: error: Unknown option '--no-such-option'")
        #expect(bad.stderrLines.contains("Usage: swoop get [<options>] [<urls> ...]"))
        // Reported once by validation, not again by the root parse.
        let rate = try await SwoopBinary.run(["--limit-rate", "fast", "http://127.0.0.1:9/x"], in: self.root)
        #expect(rate.status == 2)
        #expect(rate.stderrLines == ["swoop: error: invalid --limit-rate 'fast': give bytes per second such as 500K, 2M or 1G (0 for no limit)"])
        // Help asked for beside a mistake: help wins, as ArgumentParser gives it over any
        // validation error; the mistake is not also reported.
        let both = try await SwoopBinary.run(["get", "--limit-rate", "fast", "--help", "http://127.0.0.1:9/x"], in: self.root)
        #expect(both.status == 0)
        #expect(both.stdout.contains("USAGE: swoop get [<options>] [<urls> ...]"))
        #expect(both.stderr.isEmpty, "\(both.stderrLines)")
    }

    @Test func habitsOfCurlWgetAndAria2Users() async throws {
        defer { stop() }
        let body = serve("/h.bin", size: 5_000)
        // `swoop URL` is `swoop get URL`.
        let plain = try await SwoopBinary.run(["--state-dir", state, "-d", out, server.url("/h.bin")], in: root)
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdoutLines == ["\(out)/h.bin (4.88 KiB, 5000 bytes)"])
        // Under 1 KiB the size is exact already: said once.
        let tinyBody = serve("/tiny.bin", size: 12)
        let tiny = try await SwoopBinary.run(["--state-dir", state, "-d", out, server.url("/tiny.bin")], in: root)
        #expect(tiny.stdoutLines == ["\(out)/tiny.bin (12 bytes)"])
        #expect(digest(out + "/tiny.bin") == digest(tinyBody))
        // wget's -O and -P, curl's -c and -L, aria2's -s; a URL without a scheme is http.
        let bare = String(server.url("/h.bin").dropFirst("http://".count))
        let aliases = try await SwoopBinary.run(
            ["get", "--state-dir", state, "-P", out + "/p", "-O", "named.bin", "-c", "-L", "-s", "2", bare], in: root
        )
        #expect(aliases.status == 0, "\(aliases.stderr)")
        #expect(aliases.stderrLines == ["swoop: no scheme in \(bare): using http://\(bare)"])
        #expect(digest(out + "/p/named.bin") == digest(body))
        // A mistyped subcommand is named, not fetched as a host.
        let typo = try await SwoopBinary.run(["gte", server.url("/h.bin")], in: root)
        #expect(typo.status == 2)
        #expect(typo.stderrLines == ["swoop: error: unknown command 'gte'; did you mean 'get'?"])
        #expect(server.requests(to: "/h.bin").count == 2)
    }

    @Test func checksumMismatchIsExitSix() async throws {
        defer { stop() }
        let body = serve("/a.bin", size: 1000)
        let wrong = String(repeating: "a", count: 64)
        let result = try await get(["--checksum", "sha-256=\(wrong)", server.url("/a.bin")])
        #expect(result.status == 6)
        #expect(result.stderrLines == ["swoop: error: sha-256 mismatch for \(server.url("/a.bin")): expected \(wrong), got \(digest(body))"])
        #expect(files().isEmpty)
        // `ls` has 40 columns for the error: what went wrong, without the URL its row shows already.
        let listed = try await SwoopBinary.run(["ls", "--state-dir", state], in: root)
        let row = try #require(listed.stdoutLines.last)
        #expect(row.contains("failed") && row.contains("sha-256 mismatch: expected aaaaaaaa"), "\(listed.stdout)")
        #expect(!row.contains("mismatch for"), "\(listed.stdout)")
        let long = try await SwoopBinary.run(["ls", "--long", "--state-dir", state], in: root)
        #expect(long.stdout.contains("sha-256 mismatch for \(server.url("/a.bin")): expected \(wrong), got \(digest(body))"), "\(long.stdout)")
    }

    @Test func headersAndUserAgentAreSent() async throws {
        defer { stop() }
        _ = serve("/h.bin", size: 10)
        let result = try await get(["-H", "X-Token: abc", "-H", "Authorization: Bearer t", "--user-agent", "agent/9", server.url("/h.bin")])
        #expect(result.status == 0)
        let request = try #require(server.requests(to: "/h.bin").first)
        #expect(request.header("X-Token") == "abc")
        #expect(request.header("Authorization") == "Bearer t")
        #expect(request.header("User-Agent") == "agent/9")
        #expect(request.header("Accept-Encoding") == "identity")
    }

    @Test func plainProgressLinesGoToStderrAtMostOncePerSecond() async throws {
        defer { stop() }
        _ = serve("/slow.bin", size: 3_000_000)
        server.setDefault("/slow.bin", .throttle(bytesPerSecond: 1_000_000))
        let begin = ContinuousClock.now
        let result = try await get([server.url("/slow.bin")])
        let seconds = (ContinuousClock.now - begin).components.seconds
        #expect(result.status == 0)
        // Standard output holds the result alone, with the time it took and the average speed;
        // progress is on stderr, as curl and wget print it.
        #expect(result.stdoutLines.count == 1)
        let pattern = #"^.*/slow\.bin \(2\.86 MiB, 3000000 bytes\) in [0-9.]+s at [0-9.]+ (KiB|MiB)/s$"#
        #expect(result.stdoutLines.first?.range(of: pattern, options: .regularExpression) != nil, "\(result.stdout)")
        let progress = result.stderrLines
        #expect(progress.count >= 1)
        #expect(progress.count <= Int(seconds) + 1)
        #expect(progress.allSatisfy { $0.hasPrefix("slow.bin  ") && $0.contains("%") && $0.contains(" / 2.86 MiB") })
    }

    @Test func aDownloadDoneWithinASecondPrintsOnlyItsResult() async throws {
        defer { stop() }
        _ = serve("/quick.bin", size: 1 << 20)
        let result = try await get([server.url("/quick.bin")])
        #expect(result.status == 0)
        #expect(result.stdoutLines == ["\(out)/quick.bin (1.00 MiB, 1048576 bytes)"])
        #expect(result.stderr.isEmpty)
    }

    @Test func jsonOutputIsJSONLinesOnlyAndProgressOnlyWhenAsked() async throws {
        defer { stop() }
        _ = serve("/j.bin", size: 2_000_000)
        server.setDefault("/j.bin", .throttle(bytesPerSecond: 1_000_000))
        let plain = try await get(["--json", server.url("/j.bin")])
        #expect(plain.status == 0)
        #expect(plain.stderr.isEmpty)
        let results = plain.stdoutLines.map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(results.count == 1)
        #expect(results.first??["state"] as? String == "completed")

        try FileManager.default.removeItem(atPath: out + "/j.bin")
        let withProgress = try await get(["--json", "--progress", "--overwrite", server.url("/j.bin")])
        #expect(withProgress.status == 0)
        let objects = withProgress.stdoutLines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        // Every line is a JSON object: the running states, then the result.
        #expect(objects.count == withProgress.stdoutLines.count)
        #expect(objects.count >= 2)
        #expect(objects.dropLast().allSatisfy { $0["state"] as? String == "active" })
        #expect(objects.last?["state"] as? String == "completed")
        #expect(withProgress.stderr.isEmpty)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
    func terminalGetsALiveLineRedrawnInPlace() async throws {
        defer { stop() }
        _ = serve("/tty.bin", size: 1_000_000)
        server.setDefault("/tty.bin", .throttle(bytesPerSecond: 2_000_000))
        let command = [SwoopBinary.path, "get", "--state-dir", state, "-d", out, server.url("/tty.bin")].joined(separator: " ")
        // `script` gives the child a pseudo-terminal, as an interactive shell would.
        let result = try await SwoopBinary.run(["-qfec", command, "/dev/null"], in: root, executable: "/usr/bin/script")
        #expect(result.status == 0)
        // Each frame returns to the line's start (\r) and ends with clear-to-end-of-line.
        let redraws = result.stdout.components(separatedBy: "\r").filter { $0.hasPrefix("tty.bin  ") }
        #expect(redraws.count >= 2)
        #expect(redraws.contains { $0.contains("%") && $0.contains("ETA") && $0.hasSuffix("\u{1B}[K") })
        #expect(result.stdout.contains("\(out)/tty.bin (977 KiB, 1000000 bytes)"))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
    func terminalShowsABoardOfActiveDownloadsAndASummary() async throws {
        defer { stop() }
        for name in ["b1", "b2", "b3"] {
            _ = serve("/\(name).bin", size: 1_000_000)
            server.setDefault("/\(name).bin", .throttle(bytesPerSecond: 1_000_000))
        }
        let urls = ["b1", "b2", "b3"].map { server.url("/\($0).bin") }
        let command = ([SwoopBinary.path, "get", "-j", "2", "--state-dir", state, "-d", out] + urls).joined(separator: " ")
        let result = try await SwoopBinary.run(["-qfec", command, "/dev/null"], in: root, executable: "/usr/bin/script")
        #expect(result.status == 0)
        // Two download lines and the summary, redrawn by moving up two lines.
        #expect(result.stdout.contains("\u{1B}[2A"))
        #expect(result.stdout.contains("active 2 · waiting 1"))
        #expect(result.stdout.contains("b1.bin  ") && result.stdout.contains("b2.bin  "))
        #expect(result.stdout.contains("\(out)/b3.bin (977 KiB, 1000000 bytes)"))
        // The board drawn again under a result line shows no line of that download: its last
        // progress is stale once its result is printed.
        for name in ["b1", "b2"] {
            let range = try #require(result.stdout.range(of: "\(out)/\(name).bin (977 KiB, 1000000 bytes)"))
            // The board's lines drawn right after the result line: each ends clearing the rest of its line.
            // (The terminal writes "\r\n" for "\n"; a frame that redraws in place starts with "\r".)
            let redrawn = result.stdout[range.upperBound...].replacingOccurrences(of: "\r\n", with: "\n")
                .prefix { $0 != "\r" }.split(separator: "\n", omittingEmptySubsequences: false).dropFirst()
                .prefix { $0.hasSuffix("\u{1B}[K") && !$0.hasPrefix("\u{1B}") }
            #expect(!redrawn.isEmpty, "\(result.stdout[range.upperBound...].prefix(300).debugDescription)")
            #expect(!redrawn.contains { $0.hasPrefix("\(name).bin  ") }, "the board under \(name)'s result: \(Array(redrawn))")
        }
    }

    @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func signalStopsCleanlyAndTheSameCommandContinues(signal: Int32, status: Int32) async throws {
        defer { stop() }
        let body = serve("/big.bin", size: 4_000_000)
        server.enqueue("/big.bin", .stallAfter(bytes: 2_500_000))
        // The rerun takes over a second, so that it prints a progress line.
        server.setDefault("/big.bin", .throttle(bytesPerSecond: 1_000_000))
        let running = try start([server.url("/big.bin")])
        #expect(await eventually { server.bodyBytesSent(to: "/big.bin") >= 2_500_000 })
        #expect(await eventually { fileSize(out + "/big.bin.swoop") == 2_500_000 })
        running.signal(signal)
        let stopped = await running.wait()
        #expect(stopped.status == status)
        // SIGTERM is no Ctrl-C: the line says which it was.
        let how = signal == SIGTERM ? "terminated" : "interrupted"
        #expect(stopped.stderrLines.last == "swoop: \(how); progress saved. Run `swoop resume --state-dir \(state)` (or the same command) to continue.")
        #expect(!FileManager.default.fileExists(atPath: out + "/big.bin"))

        let resumed = try await get([server.url("/big.bin")])
        #expect(resumed.status == 0)
        #expect(digest(out + "/big.bin") == digest(body))
        #expect(server.requests(to: "/big.bin").last?.header("Range") == "bytes=2500000-")
        // It says so once, as `wget -c` and `curl -C -` do.
        let continuing = resumed.stderrLines.filter { $0.hasPrefix("swoop: continuing") }
        #expect(continuing == ["swoop: continuing \(out)/big.bin from 2.38 MiB of 3.81 MiB"])
        // The result line's time and speed are this run's, and it says how much that was.
        let result = resumed.stdoutLines.first { $0.hasPrefix("\(out)/big.bin (3.81 MiB, 4000000 bytes) in ") }
        #expect(result?.hasSuffix(", 1.43 MiB of it this run") == true, "\(resumed.stdout)")
        // The second run's progress starts from the saved bytes (62.5%), not from 0.
        let first = resumed.stderrLines.first { $0.hasPrefix("big.bin  ") }
        let percent = first.flatMap { Double($0.dropFirst("big.bin  ".count).prefix { $0 != "%" }) }
        #expect((percent ?? 0) > 62.5, "\(resumed.stderr)")
    }

    /// Two `swoop get` of `path` at once: the first stalled after `stalledAfter` bytes, the second
    /// waiting for it (it said so). Returns the body, both processes and the second's line.
    func secondWaitingForFirst(
        _ path: String, size: Int, stalledAfter: Int
    ) async throws -> (body: [UInt8], first: SwoopBinary.Running, second: SwoopBinary.Running, waiting: String) {
        let body = serve(path, size: size)
        server.enqueue(path, .stallAfter(bytes: stalledAfter))
        let first = try start([server.url(path)])
        #expect(await eventually { server.bodyBytesSent(to: path) >= stalledAfter })
        let second = try start([server.url(path)])
        let waiting = "swoop: \(server.url(path)) is already being downloaded by another swoop process (pid \(first.pid)): waiting for it"
        #expect(await eventually { ((try? String(contentsOf: second.err, encoding: .utf8)) ?? "").contains(waiting) })
        return (body, first, second, waiting)
    }

    /// Two `swoop get` of one download at once: the second waits for the first, saying so once,
    /// and when the first stops (Ctrl-C) it goes on from the bytes the first kept.
    @Test func aSecondProcessWaitsForTheFirstAndTakesOverWhatItStopped() async throws {
        defer { stop() }
        let (body, first, second, waiting) = try await secondWaitingForFirst("/shared.bin", size: 2_000_000, stalledAfter: 500_000)
        first.signal(SIGINT)
        #expect(await first.wait().status == 130)
        let result = await second.wait()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(digest(out + "/shared.bin") == digest(body))
        #expect(result.stderrLines.filter { $0 == waiting }.count == 1)
        // From the first's bytes: the second asked for the rest only.
        let range = server.requests(to: "/shared.bin").last?.header("Range")
        #expect(range?.hasPrefix("bytes=") == true && range != "bytes=0-", "\(String(describing: range))")
    }

    /// Started with a soft limit of 256 open files (a hard one above), swoop raises it to the hard
    /// one: every download, and every one being finished, holds files open.
    @Test func theOpenFileLimitRisesToTheHardOne() async throws {
        defer { stop() }
        _ = serve("/held.bin", size: 1_000_000)
        server.enqueue("/held.bin", .stallAfter(bytes: 100_000))
        var limit = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let hard = limit.rlim_max == rlim_t.max ? 1 << 20 : min(Int(limit.rlim_max), 1 << 20)
        try #require(hard > 256, "the hard limit must be above 256 for this test")
        let running = try SwoopBinary.Running(
            ["-c", "ulimit -Sn 256 && exec \"$0\" \"$@\"", SwoopBinary.path, "get", "--state-dir", state, "-d", out, server.url("/held.bin")],
            directory: root, executable: "/bin/sh"
        )
        #expect(await eventually { server.bodyBytesSent(to: "/held.bin") >= 100_000 })
        let limits = (try? String(contentsOfFile: "/proc/\(running.pid)/limits", encoding: .utf8)) ?? ""
        let line = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }.map(String.init) ?? ""
        let numbers = line.split(separator: " ").compactMap { Int($0) }
        #expect(numbers.first == hard, "\(line)")
        running.signal(SIGINT)
        #expect(await running.wait().status == 130)
    }

    /// Ctrl-C of a second process that only waited for the first says so: it saved no progress of
    /// its own (it said "progress saved"), and the first goes on.
    @Test func ctrlCOfAProcessThatOnlyWaitedSaysNothingStartedHere() async throws {
        defer { stop() }
        let (body, first, second, _) = try await secondWaitingForFirst("/waited.bin", size: 1_000_000, stalledAfter: 300_000)
        second.signal(SIGINT)
        let result = await second.wait()
        #expect(result.status == 130)
        #expect(result.stderrLines.last == "swoop: interrupted before any download started here. Run `swoop resume --state-dir \(state)` (or the same command) to continue.", "\(result.stderr)")
        // The first still holds it, and finishes it once its stalled connection is given up.
        first.signal(SIGINT)
        #expect(await first.wait().status == 130)
        let rerun = try await get([server.url("/waited.bin")])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(digest(out + "/waited.bin") == digest(body))
    }

    /// ... and what the first completes, the second reports complete without fetching it again.
    @Test func aSecondProcessReportsWhatTheFirstCompleted() async throws {
        defer { stop() }
        let body = serve("/shared.bin", size: 800_000)
        // Four seconds: the second finds it taken at least twice, however slowly it starts.
        server.enqueue("/shared.bin", .throttle(bytesPerSecond: 200_000))
        let first = try start([server.url("/shared.bin")])
        #expect(await eventually { server.bodyBytesSent(to: "/shared.bin") >= 40_000 })
        let second = try start([server.url("/shared.bin")])
        let results = [await first.wait(), await second.wait()]
        #expect(results.map(\.status) == [0, 0], "\(results.map(\.stderr))")
        #expect(digest(out + "/shared.bin") == digest(body))
        #expect(server.requests(to: "/shared.bin").count == 1)
        #expect(results[1].stderrLines.contains { $0.hasSuffix("(pid \(first.pid)): waiting for it") }, "\(results[1].stderr)")
    }

    /// The crash test: SIGKILL the real process after the server has sent a seeded random number of
    /// bytes, run the same command again, and count what the server had to send twice.
    @Test(arguments: [UInt64(1), 2, 3])
    func killNineThenRerunIsByteExactAndResendsAtMostOneMiB(round: UInt64) async throws {
        defer { stop() }
        let size = 16 << 20
        let seed = UInt64(Date().timeIntervalSince1970 * 1000) &+ round
        var generator = SplitMix(seed: seed)
        let cut = Int(generator.next() % UInt64(size - 2)) + 1
        print("crash test seed \(seed): SIGKILL after \(cut) of \(size) bytes")
        let body = serve("/crash.bin", size: size, seed: seed)
        server.enqueue("/crash.bin", .stallAfter(bytes: cut))
        let running = try start([server.url("/crash.bin")])
        #expect(await eventually { server.bodyBytesSent(to: "/crash.bin") >= cut }, "seed \(seed)")
        #expect(await eventually { fileSize(out + "/crash.bin.swoop") == cut }, "seed \(seed)")
        running.signal(SIGKILL)
        _ = await running.wait()

        let rerun = try await get([server.url("/crash.bin")])
        #expect(rerun.status == 0, "seed \(seed): \(rerun.stderr)")
        #expect(digest(out + "/crash.bin") == digest(body), "seed \(seed)")
        let resent = server.bodyBytesSent(to: "/crash.bin") - size
        print("crash test seed \(seed): killed at \(cut) bytes, \(resent) bytes sent twice")
        #expect(resent >= 0 && resent <= 1 << 20, "seed \(seed): \(resent) bytes sent twice")
        #expect(files() == ["crash.bin"])
    }

    /// A small file's name reaches the store with its completion (its part file carries the
    /// download's id meanwhile): killed half-way, the rerun takes its part file back under the
    /// same name, fetches the file whole and leaves nothing behind.
    @Test func killNineOfASmallFileThenRerunKeepsItsName() async throws {
        defer { stop() }
        let body = serve("/small.bin", size: 600_000)
        server.enqueue("/small.bin", .stallAfter(bytes: 250_000))
        let running = try start([server.url("/small.bin")])
        #expect(await eventually { fileSize(out + "/small.bin.swoop") == 250_000 })
        running.signal(SIGKILL)
        _ = await running.wait()

        let rerun = try await get([server.url("/small.bin")])
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(digest(out + "/small.bin") == digest(body))
        #expect(files() == ["small.bin"])
    }
}
