import Foundation
import SwoopKit
import SwoopRPC
import SwoopStore
import SwoopTesting
import Testing

/// A fleet's daemon answers aria2's lists, counts and controls for the whole fleet, from the shared
/// catalogue (issue 15). Here the catalogue is SQLite's and the "other node" is the test, claiming
/// and renewing as a node would; the daemons themselves are in `FleetCommandTests`.
@Suite("aria2 methods on a fleet's daemon", .timeLimit(.minutes(2)))
struct Aria2FleetTests {
    struct Fleet {
        let fixture: RPCFixture
        let catalogue: SQLiteCatalogue
        /// The gids added, in queue order.
        let gids: [String]

        /// Five downloads added through `addUri` (the last one paused); the first two claimed by
        /// node "far", which reports 1000 of 5000 bytes at 100 B/s for each.
        static func make() async throws -> Fleet {
            let path = scratchPath("swoop-rpc-fleet", suffix: ".sqlite")
            let catalogue = try SQLiteCatalogue(path: path, pollInterval: .milliseconds(50))
            try await catalogue.prepare()
            let fixture = try await RPCFixture.make(catalogue: catalogue, node: "near")
            var gids: [String] = []
            for index in 0..<5 {
                let options: JSONValue = index == 4 ? ["pause": "true"] : [:]
                let gid = await fixture.value("aria2.addUri", [.string(fixture.server.url("/f\(index).bin"))], options).string
                gids.append(try #require(gid))
            }
            let claims = try await catalogue.claim(ClaimRequest(node: "far", count: 2, lease: .seconds(60)))
            #expect(claims.map(\.id.rawValue) == Array(gids.prefix(2)))
            let progress = claims.map { ClaimProgress(id: $0.id, epoch: $0.epoch, totalBytes: 5000, completedBytes: 1000, bytesPerSecond: 100) }
            _ = try await catalogue.renew(node: "far", lease: .seconds(60), progress: progress)
            try await catalogue.beat(NodeBeat(name: "far", address: "10.0.0.2:6800", activeDownloads: 2, bytesPerSecond: 200))
            return Fleet(fixture: fixture, catalogue: catalogue, gids: gids)
        }

        func stop() async {
            await fixture.stop()
            await catalogue.close()
        }

        /// The gid and status of each download a list call returns.
        func listed(_ method: String, _ params: JSONValue...) async -> [[String]] {
            let result = await fixture.rpc.result(
                of: RPCCall(id: .integer(1), method: method, params: [.string("token:\(RPCFixture.secret)")] + params + [["gid", "status"]])
            )
            guard case .success(let value) = result, let list = JSONValue.parse(value.serialized())?.array else {
                Issue.record("\(method): \(result)")
                return []
            }
            return list.map { [$0.object?["gid"]?.string ?? "", $0.object?["status"]?.string ?? ""] }
        }
    }

    @Test func listsAndCountsAreTheWholeFleetsWhereverADownloadRuns() async throws {
        let fleet = try await Fleet.make()
        defer { Task { await fleet.stop() } }
        let (f, gids) = (fleet.fixture, fleet.gids)
        #expect(await fleet.listed("aria2.tellActive") == [[gids[0], "active"], [gids[1], "active"]])
        let far = await f.status(gids[0])
        #expect(far["gid"]?.string == gids[0] && far["completedLength"] == "1000" && far["totalLength"] == "5000" && far["downloadSpeed"] == "100")
        #expect(await fleet.listed("aria2.tellWaiting", 0, 10) == [[gids[2], "waiting"], [gids[3], "waiting"], [gids[4], "paused"]])
        #expect(await fleet.listed("aria2.tellWaiting", 1, 1) == [[gids[3], "waiting"]])
        // A negative offset counts from the end, backwards, as aria2 does.
        #expect(await fleet.listed("aria2.tellWaiting", -1, 2) == [[gids[4], "paused"], [gids[3], "waiting"]])
        #expect(await fleet.listed("aria2.tellWaiting", 3, 5) == [])
        #expect(await fleet.listed("aria2.tellStopped", 0, 10) == [])
        let stat = await f.value("aria2.getGlobalStat")
        #expect(stat == ["downloadSpeed": "200", "uploadSpeed": "0", "numActive": "2", "numWaiting": "3", "numStopped": "0", "numStoppedTotal": "0"])

        let claims = try await fleet.catalogue.claim(ClaimRequest(node: "far", count: 1, lease: .seconds(60)))
        #expect(try await fleet.catalogue.settle(try #require(claims.first), as: .completed(fileName: "f2.bin", totalBytes: 64)))
        #expect(await fleet.listed("aria2.tellStopped", 0, 10) == [[gids[2], "complete"]])
        let done = await f.status(gids[2])
        #expect(done["completedLength"] == "64" && done["files"]?.array?.first?.object?["path"]?.string == f.root + "/f2.bin")

        let nodes = await f.value("swoop.getNodes").array ?? []
        #expect(nodes.count == 1)
        let node = nodes.first?.object ?? [:]
        #expect(node["name"] == "far" && node["address"] == "10.0.0.2:6800" && node["numActive"] == "2" && node["downloadSpeed"] == "200")
    }

    @Test func pauseUnpauseAndRemoveActOnTheCatalogue() async throws {
        let fleet = try await Fleet.make()
        defer { Task { await fleet.stop() } }
        let (f, gids, catalogue) = (fleet.fixture, fleet.gids, fleet.catalogue)
        func entry(_ gid: String) async throws -> CatalogueEntry? { try await catalogue.entries(ids: [Download.ID(gid)]).first }

        // Waiting: paused at once. Running on another node: that node is asked.
        #expect(await f.value("aria2.pause", .string(gids[2])) == .string(gids[2]))
        #expect(try await entry(gids[2])?.state == .paused)
        #expect(await f.value("aria2.forcePause", .string(gids[0])) == .string(gids[0]))
        #expect(try await entry(gids[0])?.requested == .pause)
        #expect(try await entry(gids[0])?.state == .active, "the node running it pauses it and says so")

        #expect(
            await f.call("aria2.pause", .string(gids[2])).errorMessage
                == "download \(gids[2]) is paused: only an active or waiting one can be paused"
        )
        #expect(await f.value("aria2.unpause", .string(gids[2])) == .string(gids[2]))
        #expect(try await entry(gids[2])?.state == .waiting)
        #expect(await f.value("aria2.remove", .string(gids[3])) == .string(gids[3]))
        #expect(try await entry(gids[3])?.state == .removed)
        #expect(await f.call("aria2.remove", .string(gids[3])).errorMessage == "download \(gids[3]) is removed: there is nothing to remove")
        #expect(await f.call("aria2.unpause", "00000000000000ff").errorMessage == "No such download for GID#00000000000000ff")
        #expect(await f.call("aria2.tellStatus", "00000000000000ff").errorMessage == "No such download for GID#00000000000000ff")

        #expect(await f.value("aria2.pauseAll") == "OK")
        #expect(try await catalogue.counts() == [.active: 2, .paused: 2, .removed: 1])
        #expect(await f.value("aria2.unpauseAll") == "OK")
        #expect(try await catalogue.counts() == [.active: 2, .waiting: 2, .removed: 1])
    }

    @Test func positionsOptionsAndURIsChangeInTheSharedQueue() async throws {
        let fleet = try await Fleet.make()
        defer { Task { await fleet.stop() } }
        let (f, gids, catalogue) = (fleet.fixture, fleet.gids, fleet.catalogue)
        func entry(_ gid: String) async throws -> CatalogueEntry? { try await catalogue.entries(ids: [Download.ID(gid)]).first }
        let running = "download \(gids[0]) runs on node far (at 10.0.0.2:6800)"

        #expect(await f.value("aria2.changePosition", .string(gids[4]), 0, "POS_SET") == 0)
        #expect(await fleet.listed("aria2.tellWaiting", 0, 10) == [[gids[4], "paused"], [gids[2], "waiting"], [gids[3], "waiting"]])
        #expect(await f.value("aria2.changePosition", .string(String(gids[4].prefix(6))), 1, "POS_CUR") == 1)
        #expect(await f.value("aria2.changePosition", .string(gids[3]), -5, "POS_END") == 0)
        #expect(await fleet.listed("aria2.tellWaiting", 0, 10) == [[gids[3], "waiting"], [gids[2], "waiting"], [gids[4], "paused"]])
        #expect(
            await f.call("aria2.changePosition", .string(gids[0]), 0, "POS_SET").errorMessage
                == "\(running): only a waiting or paused download has a place in the queue (pause it first)"
        )
        #expect(await f.call("aria2.changePosition", .string(gids[2]), 0, "POS_TOP").errorMessage == "how must be POS_SET, POS_CUR or POS_END (got 'POS_TOP')")
        // addUri's position: its place in the shared waiting list.
        let second = try #require(await f.value("aria2.addUri", [.string(f.server.url("/second.bin"))], [:], 1).string)
        #expect(await fleet.listed("aria2.tellWaiting", 0, 10).map { $0[0] } == [gids[3], second, gids[2], gids[4]])

        // Options: kept with the download (its node reads them when it claims it), shown by getOption.
        #expect(await f.value("aria2.changeOption", .string(gids[2]), ["max-download-limit": "1M", "split": "2"]) == "OK")
        let stored = try #require(try await entry(gids[2]))
        let options = try #require(JSONValue.parse(Array(stored.options.utf8))?.object)
        #expect(options["max-download-limit"] == "1M" && options["split"] == "2")
        let shown = await f.value("aria2.getOption", .string(gids[2])).object ?? [:]
        #expect(shown["max-download-limit"] == "1048576" && shown["split"] == "2", "\(shown)")
        #expect(
            await f.call("aria2.changeOption", .string(gids[0]), ["max-download-limit": "1M"]).errorMessage
                == "\(running): its options cannot change here (call it there, or pause it first)"
        )
        #expect(await f.call("aria2.changeOption", .string(gids[2]), ["dir": "/elsewhere"]).errorMessage == "dir cannot be changed after a download is added")
        #expect(await f.call("aria2.changeOption", .string(gids[2]), ["split": "lots"]).errorMessage?.contains("split") == true)

        // URIs: the first replaced and a mirror added; the node that claims it moves to them.
        let old = f.server.url("/f3.bin")
        let new = f.server.url("/f3.bin?sig=2")
        let mirror = f.server.url("/mirror/f3.bin")
        #expect(await f.value("aria2.changeUri", .string(gids[3]), 1, [.string(old)], [.string(new), .string(mirror)]) == [1, 2])
        #expect(try await entry(gids[3])?.urls == [new, mirror])
        let uris = await f.value("aria2.getUris", .string(gids[3])).array?.compactMap { $0.object?["uri"]?.string }
        #expect(uris == [new, mirror])
        #expect(await f.call("aria2.changeUri", .string(gids[3]), 1, [.string(new), .string(mirror)], []).errorMessage == "a download needs at least one URI")
        #expect(await f.call("aria2.changeUri", .string(gids[3]), 1, [], ["ftp://x/y"]).errorMessage?.contains("ftp://x/y") == true)
        #expect(
            await f.call("aria2.changeUri", .string(gids[0]), 1, [], [.string(mirror)]).errorMessage
                == "\(running): its URIs cannot change here (call it there, or pause it first)"
        )
    }

    @Test func resultsAreForgottenFleetWideAndFilesAreWhereTheyWereWritten() async throws {
        let fleet = try await Fleet.make()
        defer { Task { await fleet.stop() } }
        let (f, gids, catalogue) = (fleet.fixture, fleet.gids, fleet.catalogue)
        // The far node finishes the first waiting one (gids[2]).
        let claim = try #require(try await catalogue.claim(ClaimRequest(node: "far", count: 1, lease: .seconds(60))).first)
        #expect(claim.id.rawValue == gids[2])
        #expect(try await catalogue.settle(claim, as: .completed(fileName: "f2.bin", totalBytes: 64)))

        let elsewhere = "download \(gids[2])'s file is on node far (at 10.0.0.2:6800)"
        #expect(await f.call("swoop.getFileLink", .string(gids[2])).errorMessage == "\(elsewhere): ask that daemon for the link")
        #expect(await f.call("swoop.getFileLink", .string(gids[0])).errorMessage == "GID \(gids[0]) is not complete: it has no file to link to")
        #expect(await f.call("swoop.removeWithFile", .string(gids[2])).errorMessage == "\(elsewhere): call swoop.removeWithFile there")
        #expect(
            await f.call("aria2.removeDownloadResult", .string(gids[3])).errorMessage
                == "download \(gids[3]) is waiting: only a stopped download's result can be removed"
        )
        #expect(await f.value("aria2.removeDownloadResult", .string(gids[2])) == "OK")
        #expect(try await catalogue.entries(ids: [Download.ID(gids[2])]).isEmpty)
        #expect(await f.call("aria2.tellStatus", .string(gids[2])).errorMessage == "No such download for GID#\(gids[2])")

        // Never claimed anywhere: it has no file; removed and forgotten.
        #expect(await f.value("swoop.removeWithFile", .string(gids[3])) == .string(gids[3]))
        #expect(try await catalogue.entries(ids: [Download.ID(gids[3])]).isEmpty)

        // Purge: every stopped download of the fleet, and only those.
        #expect(await f.value("aria2.remove", .string(gids[4])) == .string(gids[4]))
        try await catalogue.add([CatalogueItem(urls: [f.server.url("/late.bin")])])
        let failing = try #require(try await catalogue.claim(ClaimRequest(node: "far", count: 1, lease: .seconds(60))).first)
        #expect(try await catalogue.settle(failing, as: .failed("gone")))
        #expect(try await catalogue.counts() == [.active: 2, .removed: 1, .failed: 1])
        #expect(await f.value("aria2.purgeDownloadResult") == "OK")
        #expect(try await catalogue.counts() == [.active: 2])
        #expect(await fleet.listed("aria2.tellStopped", 0, 10) == [])
    }

    @Test func aUniquePrefixNamesADownloadOfTheFleet() async throws {
        let fleet = try await Fleet.make()
        defer { Task { await fleet.stop() } }
        let (f, gids) = (fleet.fixture, fleet.gids)
        #expect(await f.status(String(gids[2].prefix(8)))["gid"]?.string == gids[2])
        #expect(await f.value("aria2.pause", .string(String(gids[3].prefix(6)))) == .string(gids[3]))
        let twins = ["abc0000000000001", "abc0000000000002"].map { CatalogueItem(id: Download.ID($0), urls: ["http://127.0.0.1/twin"]) }
        try await fleet.catalogue.add(twins)
        #expect(
            await f.call("aria2.tellStatus", "abc").errorMessage
                == "download id abc is ambiguous: it matches 2 downloads (abc0000000000001, abc0000000000002)"
        )
        #expect(await f.call("aria2.unpause", "abc00").errorMessage?.hasPrefix("download id abc00 is ambiguous") == true)
        #expect(await f.value("aria2.remove", "abc0000000000002") == "abc0000000000002")
    }

    @Test func aDaemonOutsideAFleetHasNoNodes() async throws {
        let fixture = try await RPCFixture.make()
        defer { Task { await fixture.stop() } }
        #expect(await fixture.call("swoop.getNodes").errorMessage == "this daemon is not in a fleet: start it with --store to share a queue")
    }
}
