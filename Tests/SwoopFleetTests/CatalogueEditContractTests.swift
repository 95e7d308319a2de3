import Foundation
import SwoopKit
import Testing

/// The rest of the contract (issue 15, SQLite and PostgreSQL): forgetting, moving and revising
/// downloads, stop order, where a file was written, a resumed download left to the node with its
/// bytes, and a node's name taken for one run of a daemon.
@Suite("Fleet catalogue contract: edits, affinity, names (SQLite and PostgreSQL)")
struct CatalogueEditContractTests {
    @Test(arguments: CatalogueKind.allCases)
    func onlyStoppedDownloadsAreForgottenWithTheirParts(kind: CatalogueKind) async throws {
        try await withFleet(kind) { fleet in
            let catalogue = fleet[0]
            let added = items(5)
            try await catalogue.add(added)
            let claims = try await catalogue.claim(ClaimRequest(node: "a", count: 3, lease: longLease, takesParts: true))
            try #require(claims.count == 3)
            // 0 completes, 1 is split into two parts and then removed, 2 stays active; 3 fails; 4 waits.
            #expect(try await catalogue.settle(claims[0], as: .completed(fileName: "f-0", totalBytes: 1)))
            let parts = (0..<2).map { CatalogueItem(urls: added[1].urls, priority: CatalogueRules.partPriority, parent: added[1].id,
                part: CataloguePart(path: "/tmp/f-1.swoop", fileName: "f-1", start: $0 * 10, end: $0 * 10 + 9, length: 20, etag: "\"e\"", lastModified: nil)) }
            #expect(try await catalogue.split(claims[1], into: parts))
            #expect(try await catalogue.settle(claims[1], as: .removed))
            let failing = try #require(try await catalogue.claim(ClaimRequest(node: "b", count: 1, lease: longLease)).first)
            #expect(try await catalogue.settle(failing, as: .failed("gone")))
            let effects = try await catalogue.forget(ids: added.map(\.id) + [Download.ID.make()])
            #expect(effects[added[0].id] == .done && effects[added[1].id] == .done)
            #expect(effects[added[2].id] == .refused(.active, node: "a"))
            #expect(effects[added[4].id] == .refused(.waiting, node: nil))
            #expect(effects.values.filter { $0 == .notFound }.count == 1)
            #expect(effects[failing.id] == .done)
            #expect(try await catalogue.parts(of: added[1].id).isEmpty)
            #expect(try await catalogue.entries(in: nil, offset: 0, limit: 10).map(\.id) == [added[2].id, added[4].id])
            // Purge: every stopped one at once, only those.
            #expect(try await catalogue.settle(claims[2], as: .completed(fileName: "f-2", totalBytes: 1)))
            #expect(try await catalogue.control(.remove, ids: [added[4].id]) == [added[4].id: .done(.removed)])
            #expect(try await catalogue.forget(in: [.completed, .waiting]) == 1)
            #expect(try await catalogue.counts() == [.removed: 1])
            #expect(try await catalogue.forget(in: Set(Download.State.allCases)) == 1)
            #expect(try await catalogue.counts() == [:])
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func aWaitingDownloadMovesInTheWaitingList(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 2) { fleet in
            let catalogue = fleet[0]
            let plain = items(5)
            let urgent = items(1, name: "urgent", priority: 5)
            try await catalogue.add(plain + urgent)
            let running = try #require(try await catalogue.claim(ClaimRequest(node: "a", count: 1, lease: longLease)).first)
            #expect(running.id == urgent[0].id)
            #expect(try await catalogue.control(.pause, ids: [plain[3].id]) == [plain[3].id: .done(.paused)])
            func order() async throws -> [String] {
                try await fleet[1].entries(in: CatalogueRules.waitingList, offset: 0, limit: 100).map { String($0.urls[0].split(separator: "/").last!) }
            }
            #expect(try await order() == ["f-0", "f-1", "f-2", "f-3", "f-4"])
            // To the front; to the end; from where it is; next to a neighbour with no room between.
            #expect(try await catalogue.move(plain[4].id, by: 0, from: .start) == .moved(to: 0))
            #expect(try await order() == ["f-4", "f-0", "f-1", "f-2", "f-3"])
            #expect(try await catalogue.move(plain[0].id, by: 0, from: .end) == .moved(to: 4))
            #expect(try await order() == ["f-4", "f-1", "f-2", "f-3", "f-0"])
            #expect(try await catalogue.move(plain[3].id, by: -2, from: .current) == .moved(to: 1))
            #expect(try await order() == ["f-4", "f-3", "f-1", "f-2", "f-0"])
            #expect(try await catalogue.move(plain[0].id, by: 2, from: .start) == .moved(to: 2))
            #expect(try await order() == ["f-4", "f-3", "f-0", "f-1", "f-2"])
            #expect(try await catalogue.move(plain[2].id, by: 99, from: .current) == .moved(to: 4), "clamped; already last")
            #expect(try await order() == ["f-4", "f-3", "f-0", "f-1", "f-2"])
            // Every one in its own place (none share one), and the paused one keeps its state.
            let listed = try await catalogue.entries(in: CatalogueRules.waitingList, offset: 0, limit: 100)
            #expect(listed.first { $0.id == plain[3].id }?.state == .paused)
            // The claims follow the new order.
            let next = try await fleet[1].claim(ClaimRequest(node: "b", count: 2, lease: longLease))
            #expect(next.map(\.id) == [plain[4].id, plain[0].id])
            // Not in the waiting list: refused, naming the node that runs it.
            #expect(try await catalogue.move(running.id, by: 0, from: .start) == .refused(.active, node: "a"))
            #expect(try await catalogue.settle(running, as: .completed(fileName: "u", totalBytes: 1)))
            #expect(try await catalogue.move(running.id, by: 0, from: .start) == .refused(.completed, node: nil))
            #expect(try await catalogue.move(Download.ID.make(), by: 0, from: .start) == .notFound)
            // Moved before a download of a higher priority: it takes that priority, and is claimed first.
            var late = items(1, name: "late")[0]
            late.priority = 9
            try await catalogue.add([late])
            #expect(try await catalogue.move(plain[2].id, by: 0, from: .start) == .moved(to: 0))
            #expect(try await fleet[1].claim(ClaimRequest(node: "b", count: 1, lease: longLease)).map(\.id) == [plain[2].id])
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func sourcesAndOptionsChangeUnlessTheDownloadRunsElsewhere(kind: CatalogueKind) async throws {
        try await withFleet(kind) { fleet in
            let catalogue = fleet[0]
            let added = items(2)
            try await catalogue.add(added)
            let urls = ["http://other.example/f-0?sig=2", "http://127.0.0.1/mirror"]
            #expect(try await catalogue.revise(added[0].id, urls: urls, options: nil, heldBy: nil) == .done)
            #expect(try await catalogue.revise(added[0].id, urls: nil, options: #"{"n":9}"#, heldBy: "b") == .done)
            var entry = try #require(try await catalogue.entries(ids: [added[0].id]).first)
            #expect(entry.urls == urls && entry.options == #"{"n":9}"#)
            // Per-host limits count it under its new host.
            let claimed = try await catalogue.claim(ClaimRequest(node: "a", count: 2, lease: longLease, maxPerHost: 1))
            #expect(Set(claimed.map(\.id)) == Set(added.map(\.id)))
            #expect(try await catalogue.revise(added[0].id, urls: ["http://x/y"], options: nil, heldBy: "b") == .refused(.active, node: "a"))
            #expect(try await catalogue.revise(added[0].id, urls: nil, options: #"{"n":8}"#, heldBy: "a") == .done)
            #expect(try await catalogue.settle(claimed[0], as: .failed("x")))
            #expect(try await catalogue.revise(claimed[0].id, urls: nil, options: "{}", heldBy: "a") == .refused(.failed, node: nil))
            #expect(try await catalogue.revise(Download.ID.make(), urls: nil, options: "{}", heldBy: nil) == .notFound)
            entry = try #require(try await catalogue.entries(ids: [claimed[0].id]).first)
            #expect(claimed[0].id == added[0].id && entry.options == #"{"n":8}"#)
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func aResumedDownloadWaitsForTheNodeThatHasItsBytes(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 2) { fleet in
            let (a, b) = (fleet[0], fleet[1])
            let added = items(2)
            try await a.add(added)
            try await a.beat(NodeBeat(name: "a"))
            let claims = try await a.claim(ClaimRequest(node: "a", count: 2, lease: longLease))
            try #require(claims.count == 2)
            // The first has bytes on node a when it is paused; the second none.
            let progress = ClaimProgress(id: claims[0].id, epoch: claims[0].epoch, totalBytes: 100, completedBytes: 40)
            _ = try await a.renew(node: "a", lease: longLease, progress: [progress])
            #expect(try await a.settle(claims[0], as: .paused))
            #expect(try await a.settle(claims[1], as: .paused))
            _ = try await b.control(.resume, ids: added.map(\.id))
            // Node b takes only the one without bytes; a, still heard from, continues its own.
            #expect(try await b.claim(ClaimRequest(node: "b", count: 2, lease: longLease)).map(\.id) == [added[1].id])
            let again = try await a.claim(ClaimRequest(node: "a", count: 2, lease: longLease))
            #expect(again.map(\.id) == [added[0].id])
            // In a shared directory any node continues it at once (from the shared part file).
            #expect(try await a.settle(try #require(again.first), as: .released))
            try await b.beat(NodeBeat(name: "b"))
            #expect(try await b.claim(ClaimRequest(node: "b", count: 2, lease: longLease, takesParts: true)).map(\.id) == [added[0].id])
            let taken = try #require(try await b.entries(ids: [added[0].id]).first)
            #expect(try await b.settle(Claim(entry: taken, node: "b", epoch: taken.epoch), as: .paused))
            _ = try await b.control(.resume, ids: [added[0].id])
            #expect(try await a.claim(ClaimRequest(node: "a", count: 1, lease: longLease)).isEmpty, "b has its bytes now")
            try await b.leave(node: "b")
            let back = try await a.claim(ClaimRequest(node: "a", count: 1, lease: longLease))
            #expect(back.map(\.id) == [added[0].id])
            // Taken from b, it shows no bytes until a reports its own (a part file it kept from before).
            let backClaim = try #require(back.first)
            #expect(backClaim.entry.completedBytes == 0)
            _ = try await a.renew(node: "a", lease: longLease, progress: [ClaimProgress(id: backClaim.id, epoch: backClaim.epoch, completedBytes: 40)])
            // Silent for a lease: another node takes it.
            try await a.beat(NodeBeat(name: "a"))
            #expect(try await a.settle(backClaim, as: .released))
            #expect(try await b.claim(ClaimRequest(node: "b", count: 1, lease: longLease)).isEmpty)
            try await Task.sleep(for: .milliseconds(400))
            let late = try await b.claim(ClaimRequest(node: "b", count: 1, lease: .milliseconds(300), affinity: .seconds(60)))
            #expect(late.map(\.id) == [added[0].id])
            // Heard from, but resumed longer ago than the affinity lasts: another node takes it too.
            let lateClaim = try #require(late.first)
            _ = try await b.renew(node: "b", lease: longLease, progress: [ClaimProgress(id: lateClaim.id, epoch: lateClaim.epoch, completedBytes: 8)])
            #expect(try await b.settle(lateClaim, as: .released))
            try await b.beat(NodeBeat(name: "b"))
            #expect(try await a.claim(ClaimRequest(node: "a", count: 1, lease: longLease)).isEmpty)
            try await Task.sleep(for: .milliseconds(400))
            let expired = try await a.claim(ClaimRequest(node: "a", count: 1, lease: longLease, affinity: .milliseconds(300)))
            #expect(expired.map(\.id) == [added[0].id])
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func theDirectoryADownloadIsWrittenIntoIsKeptWithIt(kind: CatalogueKind) async throws {
        try await withFleet(kind) { fleet in
            let catalogue = fleet[0]
            let added = items(2)
            try await catalogue.add(added)
            let claims = try await catalogue.claim(ClaimRequest(node: "a", count: 2, lease: longLease))
            try #require(claims.count == 2)
            let progress = ClaimProgress(id: claims[0].id, epoch: claims[0].epoch, completedBytes: 1, fileName: "f-0", directory: "/srv/a")
            _ = try await catalogue.renew(node: "a", lease: longLease, progress: [progress])
            #expect(try await catalogue.entries(ids: [claims[0].id]).first?.directory == "/srv/a")
            // Ended without one: kept; a small download that ends before any heartbeat says it at its end.
            let ends = [ClaimEnd(claims[0], .completed(fileName: "f-0", totalBytes: 1)), ClaimEnd(claims[1], .completed(fileName: "f-1", totalBytes: 1), directory: "/srv/b")]
            #expect(try await catalogue.settle(ends) == [true, true])
            #expect(try await catalogue.entries(ids: claims.map(\.id)).map(\.directory) == ["/srv/a", "/srv/b"])
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func twoDaemonsJoiningUnderOneNameAtOnceNeverBothGetIt(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 4) { fleet in
            // Joined at once, all within a long lease (a loaded machine cannot make one of them late).
            let lease = longLease
            let holders = try await withThrowingTaskGroup(of: (Int, FleetNode?).self) { group in
                for (index, catalogue) in fleet.enumerated() {
                    group.addTask { (index, try await catalogue.join(NodeBeat(name: "twin", instance: "run-\(index)"), lease: lease)) }
                }
                return try await group.reduce(into: [Int: FleetNode?]()) { $0[$1.0] = $1.1 }
            }
            let winners = holders.filter { $0.value == nil }.map(\.key)
            try #require(winners.count == 1, "\(holders)")
            let winner = winners[0]
            let loser = (winner + 1) % fleet.count
            #expect(holders[loser]??.name == "twin")
            // The loser's beats write nothing; the winner's do. Its leave does not take the winner off.
            #expect(try await fleet[loser].beat(NodeBeat(name: "twin", activeDownloads: 7, instance: "run-\(loser)")) == false)
            #expect(try await fleet[winner].beat(NodeBeat(name: "twin", activeDownloads: 1, instance: "run-\(winner)")))
            try await fleet[loser].leave(node: "twin", instance: "run-\(loser)")
            #expect(try await fleet[loser].nodes().map(\.activeDownloads) == [1])
            // Silent for a lease: another run takes the name, and the first learns it at its next beat.
            try await Task.sleep(for: .milliseconds(600))
            #expect(try await fleet[loser].join(NodeBeat(name: "twin", instance: "run-\(loser)"), lease: .milliseconds(400)) == nil)
            #expect(try await fleet[winner].beat(NodeBeat(name: "twin", instance: "run-\(winner)")) == false)
            try await fleet[loser].leave(node: "twin", instance: "run-\(loser)")
            #expect(try await fleet[winner].nodes().isEmpty)
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func stoppedDownloadsComeInTheOrderTheyStopped(kind: CatalogueKind) async throws {
        try await withFleet(kind) { fleet in
            let catalogue = fleet[0]
            let added = items(3)
            try await catalogue.add(added)
            let claims = try await catalogue.claim(ClaimRequest(node: "a", count: 3, lease: longLease))
            try #require(claims.count == 3)
            for (index, outcome) in [(2, ClaimOutcome.completed(fileName: "f-2", totalBytes: 1)), (0, .failed("gone")), (1, .removed)] {
                #expect(try await catalogue.settle(claims[index], as: outcome))
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(try await catalogue.stopped(offset: 0, limit: 10).map(\.id) == [added[2].id, added[0].id, added[1].id])
            #expect(try await catalogue.stopped(offset: 1, limit: 1).map(\.id) == [added[0].id])
            #expect(try await catalogue.entries(in: nil, offset: 0, limit: 10).map(\.id) == added.map(\.id), "lists keep queue order")
        }
    }
}
