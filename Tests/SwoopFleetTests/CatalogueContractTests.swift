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
            #expect(taken.entry.completedBytes == 0, "it starts over in b's directory: none of a's bytes are b's")
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
            let added = items(3)
            try await a.add(added)
            let claims = try await a.claim(ClaimRequest(node: "a", count: 3, lease: longLease))
            try #require(claims.count == 3)
            #expect(try await b.control(.pause, ids: [added[0].id]) == [added[0].id: .asked(node: "a")])
            #expect(try await b.control(.remove, ids: [added[1].id]) == [added[1].id: .asked(node: "a")])
            // Node a's last heartbeat, then silence: its leases run out.
            _ = try await a.renew(node: "a", lease: .milliseconds(100), progress: claims.map { ClaimProgress(id: $0.id, epoch: $0.epoch) })
            try await Task.sleep(for: .milliseconds(400))
            // Asked after the lease ran out: no node holds it, and it is done at once, no claim needed.
            #expect(try await b.control(.remove, ids: [added[2].id]) == [added[2].id: .done(.removed)])
            #expect(try await a.settle(claims[2], as: .completed(fileName: "late", totalBytes: 1)) == false, "the dead holder is fenced off")
            #expect(try await b.claim(ClaimRequest(node: "b", count: 5, lease: longLease)).isEmpty)
            let states = try await b.entries(ids: added.map(\.id)).map(\.state)
            #expect(states == [.paused, .removed, .removed])
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

    /// A node's store closed under it (the node is stopping, or died in a test) says so, naming the
    /// store, rather than passing on the driver's word for it (SQLite's is "out of memory").
    @Test(arguments: CatalogueKind.allCases)
    func aClosedCatalogueSaysItWasClosed(kind: CatalogueKind) async throws {
        let catalogue = try await kind.make()
        await catalogue.close()
        let error = await #expect(throws: SwoopError.self) { try await catalogue.counts() }
        let message = error?.message ?? ""
        #expect(message.hasPrefix("counting the fleet's store "), "\(message)")
        #expect(message.hasSuffix(" failed: it was closed"), "\(message)")
    }
}
