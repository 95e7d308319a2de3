import Foundation
import SwoopKit
import Testing

/// What every fleet catalogue promises (issue 15: one contract, SQLite and PostgreSQL): queue order,
/// claims no two nodes share, leases that run out and are taken over, fenced writes, controls that
/// reach the node running a download, the fleet's limits, heartbeats and wake-ups.
@Suite("Fleet catalogue contract (SQLite and PostgreSQL)")
struct CatalogueContractTests {
    @Test(arguments: CatalogueKind.allCases)
    func addedDownloadsComeBackInQueueOrder(kind: CatalogueKind) async throws {
        try await withFleet(kind) { fleet in
            let catalogue = fleet[0]
            let first = items(2, name: "plain")
            let urgent = items(1, name: "urgent", priority: 5)
            var paused = items(1, name: "later")[0]
            paused.paused = true
            try await catalogue.add(first + urgent + [paused])
            let all = try await catalogue.entries(in: nil, offset: 0, limit: 100)
            #expect(all.map(\.urls) == [urgent[0].urls, first[0].urls, first[1].urls, paused.urls])
            #expect(all.map(\.state) == [.waiting, .waiting, .waiting, .paused])
            #expect(all[1].options == #"{"n":0}"#)
            #expect(all.allSatisfy { $0.epoch == 0 && $0.node == nil && $0.completedBytes == 0 })
            #expect(try await catalogue.counts() == [.waiting: 3, .paused: 1])
            let page = try await catalogue.entries(in: [.waiting], offset: 1, limit: 1)
            #expect(page.map(\.id) == [first[0].id])
            let unknown = Download.ID.make()
            #expect(try await catalogue.entries(ids: [first[1].id, unknown, urgent[0].id]).map(\.id) == [first[1].id, urgent[0].id])
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func nodesClaimingAtOnceNeverShareADownload(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 3) { fleet in
            let added = items(120)
            try await fleet[0].add(added)
            let claims = try await withThrowingTaskGroup(of: [Claim].self) { group in
                for (index, catalogue) in fleet.enumerated() {
                    group.addTask {
                        var mine: [Claim] = []
                        let deadline = ContinuousClock.now + .seconds(60)
                        while ContinuousClock.now < deadline {
                            let got = try await catalogue.claim(ClaimRequest(node: "node-\(index)", count: 7, lease: longLease))
                            if got.isEmpty { break }
                            mine += got
                        }
                        return mine
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(claims.count == 120)
            #expect(Set(claims.map(\.id)) == Set(added.map(\.id)))
            #expect(claims.allSatisfy { $0.epoch == 1 && $0.entry.state == .active && $0.entry.node == $0.node })
            #expect(try await fleet[1].counts() == [.active: 120])
            #expect(try await fleet[2].claim(ClaimRequest(node: "late", count: 5, lease: longLease)).isEmpty)
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func anExpiredLeaseIsTakenOverAndItsOldHolderIsRefused(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 2) { fleet in
            let (a, b) = (fleet[0], fleet[1])
            let item = items(1)[0]
            try await a.add([item])
            let old = try #require(try await a.claim(ClaimRequest(node: "a", count: 1, lease: longLease)).first)
            #expect(try await b.claim(ClaimRequest(node: "b", count: 1, lease: longLease)).isEmpty, "a live lease is not taken")
            // The heartbeat records progress and sets the lease: here a short one, which then runs out.
            let progress = ClaimProgress(id: item.id, epoch: old.epoch, totalBytes: 4096, completedBytes: 1024, bytesPerSecond: 512, fileName: "f-0")
            #expect(try await a.renew(node: "a", lease: .milliseconds(200), progress: [progress]) == Renewal())
            let seen = try #require(try await b.entries(ids: [item.id]).first)
            #expect(seen.completedBytes == 1024 && seen.totalBytes == 4096 && seen.bytesPerSecond == 512 && seen.fileName == "f-0")
            try await Task.sleep(for: .milliseconds(500))
            let taken = try #require(try await b.claim(ClaimRequest(node: "b", count: 1, lease: longLease)).first)
            #expect(taken.id == item.id && taken.epoch == old.epoch + 1 && taken.node == "b")
            // The old holder learns it on its next write, and writes nothing.
            #expect(try await a.renew(node: "a", lease: longLease, progress: [progress]) == Renewal(lost: [item.id]))
            #expect(try await a.settle(old, as: .completed(fileName: "f-0", totalBytes: 4096)) == false)
            #expect(try await a.settle(old, as: .released) == false)
            var entry = try #require(try await a.entries(ids: [item.id]).first)
            #expect(entry.state == .active && entry.node == "b" && entry.epoch == taken.epoch)
            #expect(try await b.settle(taken, as: .completed(fileName: "f-0", totalBytes: 4096)))
            entry = try #require(try await a.entries(ids: [item.id]).first)
            #expect(entry.state == .completed && entry.fileName == "f-0" && entry.completedBytes == 4096 && entry.totalBytes == 4096)
            #expect(try await b.settle(taken, as: .completed(fileName: "f-0", totalBytes: 4096)) == false, "a claim ends once")
            #expect(try await a.claim(ClaimRequest(node: "a", count: 1, lease: longLease)).isEmpty)
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func aReleasedClaimGoesBackToItsPlaceAndAFailureStays(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 2) { fleet in
            let (a, b) = (fleet[0], fleet[1])
            let added = items(3)
            try await a.add(added)
            let claims = try await a.claim(ClaimRequest(node: "a", count: 2, lease: longLease))
            try #require(claims.map(\.id) == [added[0].id, added[1].id])
            #expect(try await a.settle(claims[0], as: .released))
            #expect(try await a.settle(claims[1], as: .failed("HTTP 404 Not Found from http://127.0.0.1/f-1")))
            // Released: first in the queue again, for any node, one epoch on.
            let next = try await b.claim(ClaimRequest(node: "b", count: 5, lease: longLease))
            try #require(next.map(\.id) == [added[0].id, added[2].id])
            #expect(next[0].epoch == 2)
            let failed = try #require(try await b.entries(ids: [added[1].id]).first)
            #expect(failed.state == .failed && failed.error == "HTTP 404 Not Found from http://127.0.0.1/f-1" && failed.node == "a")
            #expect(try await b.control(.resume, ids: [added[1].id]) == [added[1].id: .done(.waiting)])
            let again = try #require(try await b.claim(ClaimRequest(node: "b", count: 1, lease: longLease)).first)
            #expect(again.id == added[1].id && again.entry.error == nil)
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func severalClaimsEndInOneWrite(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 2) { fleet in
            let (a, b) = (fleet[0], fleet[1])
            let added = items(4)
            try await a.add(added)
            let claims = try await a.claim(ClaimRequest(node: "a", count: 4, lease: longLease))
            try #require(claims.map(\.id) == added.map(\.id))
            #expect(try await b.control(.pause, ids: [added[1].id]) == [added[1].id: .asked(node: "a")])
            var stale = claims[3]
            stale.epoch += 1
            let held = try await a.settle([
                ClaimEnd(claims[0], .completed(fileName: "f-0", totalBytes: 10)), ClaimEnd(claims[1], .released),
                ClaimEnd(claims[2], .failed("HTTP 500")), ClaimEnd(stale, .completed(fileName: "x", totalBytes: 1)),
            ])
            #expect(held == [true, true, true, false])
            let entries = try await b.entries(ids: added.map(\.id))
            #expect(entries.map(\.state) == [.completed, .paused, .failed, .active])
            #expect(entries[0].fileName == "f-0" && entries[0].completedBytes == 10 && entries[2].error == "HTTP 500" && entries[3].fileName == nil)
            #expect(try await a.settle([]) == [])
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func pauseResumeAndRemoveReachTheNodeRunningTheDownload(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 2) { fleet in
            let (a, b) = (fleet[0], fleet[1])
            let added = items(2)
            let (one, two) = (added[0].id, added[1].id)
            try await a.add(added)
            // Waiting: paused at once, and not claimed while paused.
            #expect(try await b.control(.pause, ids: [one]) == [one: .done(.paused)])
            #expect(try await a.claim(ClaimRequest(node: "a", count: 5, lease: longLease)).map(\.id) == [two])
            #expect(try await b.control(.resume, ids: [one]) == [one: .done(.waiting)])
            let claim = try #require(try await a.claim(ClaimRequest(node: "a", count: 5, lease: longLease)).first)
            #expect(claim.id == one)
            // Active: asked of its node, which hears it with its heartbeat; a resume takes it back.
            #expect(try await b.control(.pause, ids: [one]) == [one: .asked(node: "a")])
            let progress = [ClaimProgress(id: one, epoch: claim.epoch)]
            #expect(try await a.renew(node: "a", lease: longLease, progress: progress).requested == [one: .pause])
            #expect(try await b.control(.resume, ids: [one]) == [one: .done(.active)])
            #expect(try await a.renew(node: "a", lease: longLease, progress: progress).requested == [:])
            #expect(try await b.control(.pause, ids: [one]) == [one: .asked(node: "a")])
            #expect(try await a.settle(claim, as: .paused))
            #expect(try await a.entries(ids: [one]).first?.state == .paused)
            // Remove: a paused download at once; a running one by its node; unknown ids say so.
            #expect(try await b.control(.remove, ids: [one]) == [one: .done(.removed)])
            let running = try #require(try await a.entries(ids: [two]).first)
            #expect(running.state == .active)
            let missing = Download.ID.make()
            #expect(try await b.control(.remove, ids: [two, missing]) == [two: .asked(node: "a"), missing: .notFound])
            #expect(try await b.control(.pause, ids: [two]) == [two: .unchanged(.active)], "a remove asked outranks a pause")
            let twoClaim = Claim(entry: running, node: "a", epoch: running.epoch)
            // Given back while a remove is asked: removed, not queued again.
            #expect(try await a.settle(twoClaim, as: .released))
            #expect(try await a.entries(ids: [two]).first?.state == .removed)
            #expect(try await b.control(.resume, ids: [one, two]) == [one: .refused(.removed), two: .refused(.removed)])
            #expect(try await a.counts() == [.removed: 2])
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func whatWasAskedOfANodeThatDiedIsDoneWhenItsLeaseRunsOut(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 2) { fleet in
            let (a, b) = (fleet[0], fleet[1])
            let added = items(2)
            try await a.add(added)
            let claims = try await a.claim(ClaimRequest(node: "a", count: 2, lease: .milliseconds(200)))
            try #require(claims.count == 2)
            #expect(try await b.control(.pause, ids: [added[0].id]) == [added[0].id: .asked(node: "a")])
            #expect(try await b.control(.remove, ids: [added[1].id]) == [added[1].id: .asked(node: "a")])
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await b.claim(ClaimRequest(node: "b", count: 5, lease: longLease)).isEmpty)
            let states = try await b.entries(ids: added.map(\.id)).map(\.state)
            #expect(states == [.paused, .removed])
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func theFleetsLimitsHoldAcrossNodes(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 2) { fleet in
            let (a, b) = (fleet[0], fleet[1])
            let fromA = items(4, host: "a.example", name: "a")
            let fromB = items(4, host: "b.example", name: "b")
            try await a.add(fromA + fromB)
            func request(_ node: String, _ count: Int) -> ClaimRequest {
                ClaimRequest(node: node, count: count, lease: longLease, maxActive: 3, maxPerHost: 2)
            }
            // In queue order, skipping a full host: a-0, a-1, then b-0; the fleet's three are taken.
            let first = try await a.claim(request("a", 10))
            try #require(first.map(\.id) == [fromA[0].id, fromA[1].id, fromB[0].id])
            #expect(try await b.claim(request("b", 10)).isEmpty)
            #expect(try await a.settle(first[0], as: .completed(fileName: "a-0", totalBytes: 1)))
            // One place free, and host a has one running again: a-2 is next.
            #expect(try await b.claim(request("b", 10)).map(\.id) == [fromA[2].id])
            #expect(try await a.settle(first[2], as: .completed(fileName: "b-0", totalBytes: 1)))
            // Host a is full again (a-1, a-2): the free place goes to b-1.
            #expect(try await b.claim(request("b", 10)).map(\.id) == [fromB[1].id])
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func nodesAreListedWithTheirLastHeartbeat(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 2) { fleet in
            try await fleet[0].beat(NodeBeat(name: "alpha", address: "127.0.0.1:6800", activeDownloads: 2, bytesPerSecond: 1000))
            try await fleet[1].beat(NodeBeat(name: "beta"))
            let before = try await fleet[1].nodes()
            #expect(before.map(\.name) == ["alpha", "beta"])
            #expect(before[0].address == "127.0.0.1:6800" && before[0].activeDownloads == 2 && before[0].bytesPerSecond == 1000)
            #expect(before.allSatisfy { $0.silentFor >= 0 && $0.silentFor < 30 })
            try await Task.sleep(for: .milliseconds(50))
            try await fleet[0].beat(NodeBeat(name: "alpha", address: "127.0.0.1:6800", activeDownloads: 0))
            let after = try await fleet[1].nodes()
            #expect(after[0].activeDownloads == 0 && after[0].startedAt == before[0].startedAt && after[0].lastBeat > before[0].lastBeat)
            // A node that stops leaves the list; one that never beat leaves nothing to take off.
            try await fleet[0].leave(node: "alpha")
            try await fleet[0].leave(node: "nobody")
            #expect(try await fleet[1].nodes().map(\.name) == ["beta"])
            // One silent for longer than a beat allows (killed) is taken off by another's beat.
            try await fleet[0].beat(NodeBeat(name: "gamma"))
            try await Task.sleep(for: .milliseconds(300))
            try await fleet[0].beat(NodeBeat(name: "gamma", forgetsSilentNodesAfter: .seconds(3600)))
            #expect(try await fleet[1].nodes().map(\.name) == ["beta", "gamma"])
            try await fleet[0].beat(NodeBeat(name: "gamma", forgetsSilentNodesAfter: .milliseconds(200)))
            #expect(try await fleet[1].nodes().map(\.name) == ["gamma"])
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func anIdleNodeIsWokenWhenWorkIsAdded(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 2) { fleet in
            let (listener, adder) = (fleet[1], fleet[0])
            let woken = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    var count = 0
                    for await _ in listener.changes() {
                        count += 1
                        // The first wake-up comes once it listens (anything may have changed before):
                        // then work is added, by another node.
                        if count == 1 { try await adder.add(items(1)) }
                        if count == 2 { return true }
                    }
                    return false
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(20))
                    return false
                }
                let first = try await group.next() ?? false
                group.cancelAll()
                return first
            }
            #expect(woken)
        }
    }

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
            // Silent for a lease: another node takes it.
            try await a.beat(NodeBeat(name: "a"))
            #expect(try await a.settle(try #require(back.first), as: .released))
            #expect(try await b.claim(ClaimRequest(node: "b", count: 1, lease: longLease)).isEmpty)
            try await Task.sleep(for: .milliseconds(400))
            let late = try await b.claim(ClaimRequest(node: "b", count: 1, lease: .milliseconds(300), affinity: .seconds(60)))
            #expect(late.map(\.id) == [added[0].id])
            // Heard from, but resumed longer ago than the affinity lasts: another node takes it too.
            #expect(try await b.settle(try #require(late.first), as: .released))
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
            let lease = Duration.milliseconds(400)
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
            #expect(try await fleet[loser].join(NodeBeat(name: "twin", instance: "run-\(loser)"), lease: lease) == nil)
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
