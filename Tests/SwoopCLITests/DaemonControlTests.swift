import Foundation
import SwoopTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("swoop add, pause, limit, resume, rm and get beside a daemon (the binary)", .timeLimit(.minutes(2)))
struct DaemonControlTests {
    @Test func commandsOnTheStateDirectoryActThroughTheDaemon() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let body = Resource.random(size: 2 << 20, seed: 3)
        server.serve("/f.bin", Resource(body: body, etag: "\"v1\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"))
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        let state = ["--state-dir", daemon.state]

        // No -d: the daemon's own directory, whatever the current one.
        let added = try await SwoopBinary.run(["add", "--limit-rate", "100K", server.url("/f.bin")] + state, in: daemon.root)
        #expect(added.status == 0, "\(added.stderr)")
        let line = try #require(added.stdoutLines.first)
        #expect(line.hasPrefix("added ") && line.hasSuffix(" " + server.url("/f.bin")))
        let prefix = String(line.split(separator: " ")[1])
        let gid = try #require(try await daemon.result("aria2.tellStatus", prefix, ["gid"]) as? [String: Any])["gid"] as? String
        #expect(try await daemon.waitFor(try #require(gid), "active"))

        // The daemon pauses it at once (it is the daemon's), keeps its bytes, and resumes it.
        let paused = try await SwoopBinary.run(["pause", prefix] + state, in: daemon.root)
        #expect(paused.stdoutLines == ["paused \(prefix) \(server.url("/f.bin"))"])
        #expect((try await daemon.result("aria2.tellStatus", prefix, ["status"]) as? [String: Any])?["status"] as? String == "paused")
        // Options given to resume change it through the daemon; a no-op says so.
        let relimited = try await SwoopBinary.run(["resume", prefix, "--limit-rate", "300K"] + state, in: daemon.root)
        #expect(relimited.stdoutLines == ["resumed \(prefix) \(server.url("/f.bin"))"])
        #expect((try await daemon.result("aria2.getOption", prefix) as? [String: Any])?["max-download-limit"] as? String == "307200")
        // Resumed, it waits for the daemon's queue a moment before it runs again.
        #expect(try await daemon.waitFor(try #require(gid), "active"))
        let again = try await SwoopBinary.run(["resume", prefix] + state, in: daemon.root)
        #expect(again.status == 2)
        #expect(again.stderrLines.last?.hasSuffix("the download is already active") == true, "\(again.stderr)")
        _ = try await SwoopBinary.run(["pause", prefix] + state, in: daemon.root)
        let limited = try await SwoopBinary.run(["limit", prefix, "0"] + state, in: daemon.root)
        #expect(limited.stdoutLines == ["limited \(prefix) \(server.url("/f.bin")) to no limit"])
        let resumed = try await SwoopBinary.run(["resume", prefix] + state, in: daemon.root)
        #expect(resumed.stdoutLines == ["resumed \(prefix) \(server.url("/f.bin"))"])
        #expect(try await daemon.waitFor(try #require(gid), "complete"))
        #expect(sha256Hex(file: daemon.downloads + "/f.bin") == sha256Hex(body))
        #expect(server.requests(to: "/f.bin").count == 3)

        // swoop get on the same state directory still works beside it.
        let other = Resource.random(size: 1000, seed: 4)
        server.serve("/g.bin", Resource(body: other, etag: "\"g\""))
        let got = try await SwoopBinary.run(["get", "-q", "-d", daemon.downloads, server.url("/g.bin")] + state, in: daemon.root)
        #expect(got.status == 0, "\(got.stderr)")
        #expect(sha256Hex(file: daemon.downloads + "/g.bin") == sha256Hex(other))

        let priority = try await SwoopBinary.run(["add", "--priority", "3", server.url("/g.bin")] + state, in: daemon.root)
        #expect(priority.status == 2)
        #expect(priority.stderrLines == ["swoop: error: --priority is not taken through the daemon running on \(daemon.state)"])

        // rm forgets a download and keeps its file (only --delete-file deletes).
        let removed = try await SwoopBinary.run(["rm", prefix] + state, in: daemon.root)
        #expect(removed.stdoutLines == ["removed \(prefix) \(server.url("/f.bin"))"])
        let gone = try await daemon.call("aria2.tellStatus", try #require(gid))
        #expect((gone["error"] as? [String: Any])?["message"] as? String == "No such download for GID#\(try #require(gid))")
        #expect(sha256Hex(file: daemon.downloads + "/f.bin") == sha256Hex(body))
    }

    /// `swoop daemon`'s per-download options are its defaults (aria2's global options): shown by
    /// getGlobalOption, followed by a download added without options of its own. They were left
    /// out: a daemon started with `--limit-rate 2M -x 4` said "max-download-limit": "0" and fetched
    /// unthrottled over one connection. getOption of such a download shows them too (it showed
    /// "max-download-limit": "0", the download having no limit of its own), and retry-wait is there.
    @Test func theDaemonsDownloadOptionsAreItsDefaults() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let body = Resource.random(size: 4 << 20, seed: 5)
        server.serve("/d.bin", Resource(body: body, etag: "\"d1\""))
        let options = ["-x", "4", "--min-split-size", "1M", "--limit-rate", "2M", "--retries", "2", "--timeout", "7", "--connect-timeout", "3", "--retry-wait", "5"]
        let daemon = try await DaemonFixture.start(extra: options)
        defer { Task { _ = await daemon.stop() } }
        let global = try #require(try await daemon.result("aria2.getGlobalOption") as? [String: Any])
        let keys = ["split", "min-split-size", "max-download-limit", "max-tries", "timeout", "connect-timeout", "retry-wait"]
        #expect(keys.map { global[$0] as? String } == ["4", "1048576", "2097152", "3", "7", "3", "5"])

        let started = ContinuousClock.now
        let gid = try #require(try await daemon.result("aria2.addUri", [server.url("/d.bin")]) as? String)
        // The download's own options show the defaults it follows, as aria2's copies of the global ones.
        let own = try #require(try await daemon.result("aria2.getOption", gid) as? [String: Any])
        #expect(keys.map { own[$0] as? String } == ["4", "1048576", "2097152", "3", "7", "3", "5"])
        #expect(try await daemon.waitFor(gid, "complete"))
        #expect(sha256Hex(file: daemon.downloads + "/d.bin") == sha256Hex(body))
        // Split over four connections, and no faster than 2 MiB/s allows for 4 MiB (with room for
        // the limiter's first burst); unlimited, it takes milliseconds here.
        let ranges = Set(server.requests(to: "/d.bin").compactMap { $0.header("Range") })
        #expect(ranges.count >= 4, "\(ranges.sorted())")
        #expect(ContinuousClock.now - started >= .milliseconds(900))
    }

    @Test func rmOfAnUnfinishedDownloadKeepsItsPartFile() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        server.serve("/k.bin", Resource(body: Resource.random(size: 4 << 20, seed: 6), etag: "\"k\""))
        server.setDefault("/k.bin", .throttle(bytesPerSecond: 256 << 10))
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        let gid = try #require(try await daemon.result("aria2.addUri", [server.url("/k.bin")]) as? String)
        #expect(await eventually { (fileSize(daemon.downloads + "/k.bin.swoop") ?? 0) > 0 })
        let removed = try await SwoopBinary.run(["rm", String(gid.prefix(6)), "--state-dir", daemon.state], in: daemon.root)
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect((fileSize(daemon.downloads + "/k.bin.swoop") ?? 0) > 0)
        // Said, as without a daemon: it once went unsaid through one.
        #expect(removed.stderrLines.last == "swoop: kept \(daemon.downloads)/k.bin.swoop: the download is forgotten, not its bytes (`rm --delete-file` deletes them too)")
        let status = try await daemon.call("aria2.tellStatus", gid)
        #expect((status["error"] as? [String: Any])?["message"] as? String == "No such download for GID#\(gid)")
    }

    @Test func addWithoutADaemonQueuesForTheNextOne() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let body = Resource.random(size: 5000, seed: 5)
        server.serve("/q.bin", Resource(body: body, etag: "\"q\""))
        let (root, out, state) = try SwoopBinary.workspace("swoop-add")
        let added = try await SwoopBinary.run(["add", "-d", out, "--state-dir", state, server.url("/q.bin")], in: root)
        #expect(added.status == 0)
        #expect(added.stdoutLines.first?.hasPrefix("added ") == true)
        #expect(added.stderrLines.last == "swoop: no swoop daemon runs on \(state): `swoop resume` (or `swoop daemon`) starts them")
        #expect(server.requests(to: "/q.bin").isEmpty)
        let listed = try await SwoopBinary.run(["ls", "--state-dir", state], in: root)
        #expect(listed.stdoutLines.last?.contains("waiting") == true)
        // A daemon started on that state directory runs it.
        let daemon = try await DaemonFixture.start(root: root)
        defer { Task { _ = await daemon.stop() } }
        let id = String(try #require(added.stdoutLines.first).split(separator: " ")[1])
        let gid = try #require((try await daemon.result("aria2.tellStatus", id, ["gid"]) as? [String: Any])?["gid"] as? String)
        #expect(try await daemon.waitFor(gid, "complete"))
        #expect(sha256Hex(file: out + "/q.bin") == sha256Hex(body))
    }
}
