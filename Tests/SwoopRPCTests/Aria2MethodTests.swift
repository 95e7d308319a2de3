import Foundation
import SwoopKit
import SwoopRPC
import SwoopTesting
import Testing

@Suite("aria2 methods over a real manager", .timeLimit(.minutes(2)))
struct Aria2MethodTests {
    @Test func anAddedDownloadIsQueryableAtOnceAndCompletesByteExact() async throws {
        let fixture = try await RPCFixture.make()
        defer { Task { await fixture.stop() } }
        let body = fixture.serve("/a.bin", size: 300_000)
        let gid = try #require(await fixture.value("aria2.addUri", [.string(fixture.server.url("/a.bin"))]).string)
        #expect(Download.ID.isGID(gid))
        let first = await fixture.status(gid)
        #expect(["waiting", "active", "complete"].contains(first["status"]?.string ?? ""))
        #expect(first["gid"]?.string == gid)
        #expect(await fixture.waitFor(gid, "complete"))
        let done = await fixture.status(gid)
        #expect(done["totalLength"] == "300000")
        #expect(done["completedLength"] == "300000")
        #expect(done["uploadLength"] == "0")
        #expect(done["errorCode"] == "0")
        #expect(done["dir"]?.string == fixture.root)
        #expect(done["numPieces"] == "1")
        #expect(done["bitfield"] == "80")
        let file = try #require(done["files"]?.array?.first?.object)
        #expect(file["path"]?.string == fixture.root + "/a.bin")
        #expect(file["index"] == "1")
        #expect(file["length"] == "300000")
        #expect(file["selected"] == "true")
        #expect(file["uris"] == [["uri": .string(fixture.server.url("/a.bin")), "status": "used"]])
        #expect(sha256Hex(file: fixture.root + "/a.bin") == sha256Hex(body))
        // Only the keys asked for.
        #expect(await fixture.value("aria2.tellStatus", .string(gid), ["status", "gid"]) == ["gid": .string(gid), "status": "complete"])
        #expect(await fixture.value("aria2.getFiles", .string(gid)) == done["files"])
        #expect(await fixture.value("aria2.getUris", .string(gid)) == file["uris"])
    }

    @Test func optionsAreStringsAndOthersAreIgnoredAsAria2Does() async throws {
        let fixture = try await RPCFixture.make()
        defer { Task { await fixture.stop() } }
        let body = fixture.serve("/o.bin", size: 100_000)
        let options: JSONValue = [
            "out": "named.bin", "split": "4", "max-connection-per-server": "2", "min-split-size": "1M", "max-tries": "3",
            "header": ["X-One: 1", "X-Two: 2"], "user-agent": "aria2-test/1", "timeout": 30, "checksum": .string("sha-256=" + sha256Hex(body)),
            "no-such-option": "x",
        ]
        let gid = try #require(await fixture.value("aria2.addUri", [.string(fixture.server.url("/o.bin"))], options).string)
        #expect(await fixture.waitFor(gid, "complete"))
        #expect(sha256Hex(file: fixture.root + "/named.bin") == sha256Hex(body))
        let request = try #require(fixture.server.requests(to: "/o.bin").last)
        #expect(request.header("X-One") == "1")
        #expect(request.header("X-Two") == "2")
        #expect(request.header("User-Agent") == "aria2-test/1")
        let option = try #require(await fixture.value("aria2.getOption", .string(gid)).object)
        #expect(option["out"] == "named.bin")
        #expect(option["split"] == "2")
        #expect(option["max-tries"] == "3")
        #expect(option["min-split-size"] == "1048576")
        #expect(option["dir"]?.string == fixture.root)
        #expect(option["header"] == ["X-One: 1", "X-Two: 2", "User-Agent: aria2-test/1"])
        // A value Swoop cannot read is an error naming the option.
        let bad = await fixture.call("aria2.addUri", [.string(fixture.server.url("/o.bin"))], ["split": "many"])
        #expect(bad.errorMessage == "split: 'many' is not a number from 1 to 64")
        let notURL = await fixture.call("aria2.addUri", ["ftp://example.com/x"])
        #expect(notURL.errorMessage?.contains("ftp://example.com/x") == true)
        // A port NIO would trap on is refused here, the daemon still answering after it.
        let badPort = await fixture.call("aria2.addUri", ["http://127.0.0.1:99999/x"])
        #expect(badPort.errorMessage == "invalid URL (the port 99999 is not a number from 1 to 65535): http://127.0.0.1:99999/x")
        let badMirror = await fixture.call("aria2.addUri", [.string(fixture.server.url("/o.bin")), "http://127.0.0.1:0/o.bin"])
        #expect(badMirror.errorMessage == "invalid URL (the port 0 is not a number from 1 to 65535): http://127.0.0.1:0/o.bin")
        let badHeader = await fixture.call("aria2.addUri", [.string(fixture.server.url("/o.bin"))], ["header": "é: x"])
        #expect(badHeader.errorMessage == "header: 'é: x': a header name cannot have 'é'")
        let version = await fixture.call("aria2.getVersion")
        #expect(version.errorMessage == nil)
    }

    @Test func aDirectoryOutsideTheRootsIsRefused() async throws {
        let outside = try makeTemporaryDirectory("swoop-rpc-allowed")
        let fixture = try await RPCFixture.make(allowed: [outside])
        defer { Task { await fixture.stop() } }
        try FileManager.default.createSymbolicLink(atPath: fixture.root + "/escape", withDestinationPath: "/etc")
        let url: JSONValue = [.string(fixture.server.url("/r.bin"))]
        let refused: [JSONValue] = [["dir": "/root/.ssh"], ["out": "../../x"], ["dir": "escape"], ["dir": "sub/../../.."], ["out": "escape/passwd"]]
        for options in refused {
            let result = await fixture.call("aria2.addUri", url, options)
            #expect(result.errorMessage?.contains("is outside the download directories") == true, "\(options)")
        }
        #expect(await fixture.value("aria2.tellWaiting", 0, 100) == [])
        #expect(await fixture.value("aria2.tellActive") == [])
        // Inside: a relative dir, a sub-directory name in out, an allowed directory.
        fixture.serve("/r.bin", size: 10)
        for options: JSONValue in [["dir": "sub"], ["out": "deeper/r2.bin"], ["dir": .string(outside)]] {
            let gid = try #require(await fixture.value("aria2.addUri", url, options).string)
            #expect(await fixture.waitFor(gid, "complete"))
        }
        #expect(fileSize(fixture.root + "/sub/r.bin") == 10)
        #expect(fileSize(fixture.root + "/deeper/r2.bin") == 10)
        #expect(fileSize(outside + "/r.bin") == 10)
    }

    @Test func aFailedDownloadHasAria2sErrorCodeAndMessage() async throws {
        let fixture = try await RPCFixture.make()
        defer { Task { await fixture.stop() } }
        // No events observed: the code comes from the store (as after a restart).
        let gid = try #require(await fixture.value("aria2.addUri", [.string(fixture.server.url("/missing"))]).string)
        #expect(await fixture.waitFor(gid, "error"))
        let status = await fixture.status(gid)
        #expect(status["errorCode"] == "3")
        #expect(status["errorMessage"]?.string?.contains("404") == true)
        #expect(await fixture.value("aria2.tellStopped", 0, 10, ["gid", "status"]) == [["gid": .string(gid), "status": "error"]])
    }
}

@Suite("aria2 batches of addUri", .timeLimit(.minutes(1)))
struct Aria2BatchAddTests {
    @Test func aBatchOfAddsIsAnsweredInOrderWithEachCallsOwnError() async throws {
        let fixture = try await RPCFixture.make(maxConcurrent: 1)
        defer { Task { await fixture.stop() } }
        for n in 0..<3 { fixture.serve("/b\(n).bin", size: 100, seed: UInt64(n + 1)) }
        func add(_ id: Int, _ url: String, _ options: String = "{}") -> String {
            #"{"jsonrpc":"2.0","id":\#(id),"method":"aria2.addUri","params":["token:s3cret",["\#(url)"],\#(options)]}"#
        }
        let body = "[" + [
            add(1, fixture.server.url("/b0.bin")), add(2, fixture.server.url("/b1.bin"), #"{"dir":"/etc"}"#),
            #"{"jsonrpc":"2.0","id":3,"method":"aria2.getVersion","params":["token:s3cret"]}"#,
            add(4, fixture.server.url("/b2.bin"), #"{"split":"0"}"#), add(5, fixture.server.url("/b2.bin"), #"{"out":"other.bin"}"#),
            add(6, fixture.server.url("/b1.bin")).replacingOccurrences(of: "token:s3cret", with: "token:nope"),
        ].joined(separator: ",") + "]"
        let responses = await fixture.rpc.answer(RPCRequest.parse(Array(body.utf8)))
        #expect(responses.map(\.id) == [1, 2, 3, 4, 5, 6])
        let gids = [responses[0], responses[4]].compactMap { try? $0.result.get().string }
        #expect(gids.count == 2)
        #expect(responses[1].result.errorMessage?.contains("is outside the download directories") == true)
        #expect(responses[2].result.errorMessage == nil)
        #expect(responses[3].result.errorMessage == "split: '0' is not a number from 1 to 64")
        #expect(responses[5].result.errorMessage == "Unauthorized")
        for gid in gids { #expect(await fixture.waitFor(gid, "complete")) }
        #expect(fileSize(fixture.root + "/b0.bin") == 100)
        #expect(fileSize(fixture.root + "/other.bin") == 100)
    }
}
