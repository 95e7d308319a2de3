import Foundation
import SwoopKit
import SwoopRPC
import SwoopTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `/files/…`: a finished download's file for a signed link (`swoop.getFileLink`), with ranges,
/// as an attachment; nothing for a bad or expired link, a foreign Host or Origin, a file replaced
/// by a link or a directory that now leads outside the download roots.
@Suite("swoop daemon: finished files for signed links (the binary)", .timeLimit(.minutes(2)))
struct FileServingTests {
    struct Finished {
        let daemon: DaemonFixture
        let server: TestServer
        let gid: String
        let body: [UInt8]
        let link: String
    }

    /// A daemon with one download of `name` (in `dir`, when given) complete, and a link to it.
    static func finished(_ name: String = "report 2026 ü.bin", dir: String? = nil) async throws -> Finished {
        let server = try await TestServer.start()
        let body = Resource.random(size: 300_000, seed: 7)
        server.serve("/f.bin", Resource(body: body, etag: "\"v1\""))
        let daemon = try await DaemonFixture.start()
        var options = ["out": name]
        if let dir { options["dir"] = dir }
        let gid = try #require(try await daemon.result("aria2.addUri", [server.url("/f.bin")], options) as? String)
        #expect(try await daemon.waitFor(gid, "complete"))
        let link = try #require(try await daemon.result("swoop.getFileLink", gid) as? String)
        return Finished(daemon: daemon, server: server, gid: gid, body: body, link: link)
    }

    static func get(_ target: String, port: Int, headers: [String] = []) async throws -> RawHTTP.Reply {
        try await RawHTTP.send(port: port, request: WebPageServingTests.get(target, port: port, headers: headers))
    }

    func stop(_ f: Finished) {
        Task {
            _ = await f.daemon.stop()
            try? await f.server.shutdown()
        }
    }

    @Test func aLinkServesTheFileAsAnAttachmentWithRanges() async throws {
        let f = try await Self.finished()
        defer { stop(f) }
        #expect(f.link.hasPrefix("/files/\(f.gid)/report%202026%20%C3%BC.bin?expires="))
        let whole = try await Self.get(f.link, port: f.daemon.port)
        #expect(whole.status == 200)
        #expect(whole.body == f.body)
        #expect(WebPageServingTests.header("Content-Disposition", in: whole) == "attachment; filename=\"report 2026 _.bin\"; filename*=UTF-8''report%202026%20%C3%BC.bin")
        #expect(WebPageServingTests.header("Content-Type", in: whole) == "application/octet-stream")
        #expect(WebPageServingTests.header("X-Content-Type-Options", in: whole) == "nosniff")
        #expect(WebPageServingTests.header("Accept-Ranges", in: whole) == "bytes")

        let part = try await Self.get(f.link, port: f.daemon.port, headers: ["Range: bytes=1000-1999"])
        #expect(part.status == 206)
        #expect(part.body == Array(f.body[1000...1999]))
        #expect(WebPageServingTests.header("Content-Range", in: part) == "bytes 1000-1999/300000")
        let tail = try await Self.get(f.link, port: f.daemon.port, headers: ["Range: bytes=-10"])
        #expect(tail.status == 206 && tail.body == Array(f.body.suffix(10)))
        let rest = try await Self.get(f.link, port: f.daemon.port, headers: ["Range: bytes=299990-"])
        #expect(rest.status == 206 && rest.body == Array(f.body.suffix(10)))
        let beyond = try await Self.get(f.link, port: f.daemon.port, headers: ["Range: bytes=300000-"])
        #expect(beyond.status == 416)
        #expect(WebPageServingTests.header("Content-Range", in: beyond) == "bytes */300000")
        let several = try await Self.get(f.link, port: f.daemon.port, headers: ["Range: bytes=0-1,5-6"])
        #expect(several.status == 200 && several.body == f.body)
    }

    @Test func aLinkThatIsNotThisDaemonsOrHasExpiredIsRefused() async throws {
        let f = try await Self.finished("a.bin")
        defer { stop(f) }
        let parts = f.link.split(separator: "?", maxSplits: 1).map(String.init)
        let (path, query) = (parts[0], parts[1])
        var tampered = Array(query)
        tampered[tampered.count - 1] = tampered.last == "0" ? "1" : "0"
        let expired = FileLinks(secret: f.daemon.secret).path(id: Download.ID(f.gid), name: "a.bin", expires: Int(Date().timeIntervalSince1970) - 1)
        let otherSecret = FileLinks(secret: "not the secret").path(id: Download.ID(f.gid), name: "a.bin", expires: Int(Date().timeIntervalSince1970) + 60)
        let otherGID = path.replacingOccurrences(of: f.gid, with: "00000000000000aa") + "?" + query
        for target in [path, path + "?" + String(tampered), expired, otherSecret, otherGID, path + "?expires=99999999999&signature="] {
            let reply = try await Self.get(target, port: f.daemon.port)
            #expect(reply.status == 403, "\(target)")
            #expect(reply.body != f.body)
        }
        // The daemon's own fresh link for the same file still works.
        #expect(try await Self.get(f.link, port: f.daemon.port).status == 200)
        // Only complete downloads have links.
        let unknown = try await f.daemon.call("swoop.getFileLink", "00000000000000bb")
        #expect(unknown["error"] != nil)
    }

    @Test func aForeignOriginOrHostGetsNoFile() async throws {
        let f = try await Self.finished("a.bin")
        defer { stop(f) }
        let origin = try await Self.get(f.link, port: f.daemon.port, headers: ["Origin: https://evil.example"])
        #expect(origin.status == 403 && origin.body != f.body)
        let host = try await RawHTTP.send(
            port: f.daemon.port, request: WebPageServingTests.get(f.link, port: f.daemon.port, host: "evil.example:\(f.daemon.port)")
        )
        #expect(host.status == 403 && host.body != f.body)
    }

    /// The file found by id is opened without following a link: swapped for a link to a file
    /// outside the roots, it is not served; nor is a file whose directory became a link outside.
    @Test func aFileOrDirectoryReplacedByALinkOutsideTheRootsIsNotServed() async throws {
        let f = try await Self.finished("a.bin", dir: "sub")
        defer { stop(f) }
        let outside = f.daemon.root + "/outside"
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        let secret = Array("not for the page".utf8)
        _ = FileManager.default.createFile(atPath: outside + "/a.bin", contents: Data(secret))
        let file = f.daemon.downloads + "/sub/a.bin"
        #expect(try await Self.get(f.link, port: f.daemon.port).body == f.body)

        try FileManager.default.removeItem(atPath: file)
        #expect(symlink(outside + "/a.bin", file) == 0)
        let linkedFile = try await Self.get(f.link, port: f.daemon.port)
        #expect(linkedFile.status == 404)
        #expect(linkedFile.body != secret)

        try FileManager.default.removeItem(atPath: f.daemon.downloads + "/sub")
        #expect(symlink(outside, f.daemon.downloads + "/sub") == 0)
        let linkedDirectory = try await Self.get(f.link, port: f.daemon.port)
        #expect(linkedDirectory.status == 404)
        #expect(linkedDirectory.body != secret)
    }
}

extension FileServingTests {
    /// An empty finished file is served empty (a range of it too), and clients that go away
    /// before the answer leave the daemon serving: the file it opened for them is closed.
    @Test func anEmptyFileAndClientsThatLeaveAtOnce() async throws {
        let server = try await TestServer.start()
        server.serve("/empty.bin", Resource(body: []))
        server.serve("/f.bin", Resource(body: Resource.random(size: 2 << 20, seed: 5)))
        let daemon = try await DaemonFixture.start()
        defer {
            Task {
                _ = await daemon.stop()
                try? await server.shutdown()
            }
        }
        let empty = try #require(try await daemon.result("aria2.addUri", [server.url("/empty.bin")]) as? String)
        let full = try #require(try await daemon.result("aria2.addUri", [server.url("/f.bin")]) as? String)
        #expect(try await daemon.waitFor(empty, "complete"))
        #expect(try await daemon.waitFor(full, "complete"))
        let emptyLink = try #require(try await daemon.result("swoop.getFileLink", empty) as? String)
        let reply = try await Self.get(emptyLink, port: daemon.port)
        #expect(reply.status == 200 && reply.body.isEmpty)
        // No byte to range over: the (empty) whole, as RFC 9110 lets a server ignore Range.
        let ranged = try await Self.get(emptyLink, port: daemon.port, headers: ["Range: bytes=0-"])
        #expect(ranged.status == 200 && ranged.body.isEmpty)

        let link = try #require(try await daemon.result("swoop.getFileLink", full) as? String)
        for _ in 0..<20 {
            // The request, then a reset before reading anything.
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(daemon.port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            let request = WebPageServingTests.get(link, port: daemon.port)
            _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            close(fd)
        }
        try await Task.sleep(for: .milliseconds(300))
        let after = try await Self.get(link, port: daemon.port)
        #expect(after.status == 200 && after.body.count == 2 << 20)
        #expect(daemon.running.process.isRunning)
    }
}
