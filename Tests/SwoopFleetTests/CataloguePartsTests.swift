import Foundation
import SwoopKit
import Testing

/// The catalogue's side of a download split across nodes (a shared download directory), on both
/// catalogues: parts are claimed by any node before other downloads, stay out of lists and counts,
/// are replaced only under the download's claim, and follow what is asked of the download.
@Suite("Fleet catalogue contract: split downloads (SQLite and PostgreSQL)", .timeLimit(.minutes(2)))
struct CataloguePartsTests {
    /// `count` parts of 100 bytes each of `parent`'s file.
    static func parts(of parent: CatalogueEntry, _ count: Int) -> [CatalogueItem] {
        (0..<count).map { index in
            let part = CataloguePart(
                path: "/shared/f.bin.swoop", fileName: "f.bin", start: index * 100, end: index * 100 + 99, length: count * 100,
                etag: "\"v1\"", lastModified: nil
            )
            return CatalogueItem(urls: parent.urls, options: parent.options, priority: CatalogueRules.partPriority, parent: parent.id, part: part)
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func partsAreClaimedFirstByAnyNodeAndLeftOutOfLists(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 2) { fleet in
            let (owner, helper) = (fleet[0], fleet[1])
            let added = items(2)
            try await owner.add(added)
            let download = try #require(try await owner.claim(ClaimRequest(node: "owner", count: 1, lease: longLease)).first)
            #expect(download.id == added[0].id)
            let split = Self.parts(of: download.entry, 3)
            #expect(try await owner.split(download, into: split))

            #expect(try await helper.entries(in: nil, offset: 0, limit: 10).map(\.id) == added.map(\.id))
            #expect(try await helper.counts() == [.active: 1, .waiting: 1])
            let parts = try await helper.parts(of: download.id)
            #expect(parts.map(\.id) == split.map(\.id))
            #expect(parts.allSatisfy { $0.parent == download.id && $0.state == .waiting })
            #expect(parts.map(\.part) == split.map(\.part))
            #expect(try await helper.parts(of: added[1].id).isEmpty)

            // Before the other download, whoever claims.
            let claimed = try await helper.claim(ClaimRequest(node: "helper", count: 2, lease: longLease, takesParts: true))
            #expect(claimed.map(\.id) == Array(split.prefix(2).map(\.id)))
            #expect(claimed.allSatisfy { $0.entry.part != nil && $0.entry.parent == download.id })

            // Only the download's holder may split it: a stale claim writes nothing.
            var stale = download
            stale.epoch -= 1
            #expect(try await helper.split(stale, into: Self.parts(of: download.entry, 1)) == false)
            #expect(try await owner.parts(of: download.id).map(\.id) == split.map(\.id))

            // Split again (the earlier split failed, say): the parts are replaced.
            let again = Self.parts(of: download.entry, 2)
            #expect(try await owner.split(download, into: again))
            #expect(try await owner.parts(of: download.id).map(\.id) == again.map(\.id))
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func whatIsAskedOfASplitDownloadReachesItsParts(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 2) { fleet in
            let (owner, helper) = (fleet[0], fleet[1])
            try await owner.add(items(1))
            let download = try #require(try await owner.claim(ClaimRequest(node: "owner", count: 1, lease: longLease)).first)
            let split = Self.parts(of: download.entry, 3)
            #expect(try await owner.split(download, into: split))
            let running = try await helper.claim(ClaimRequest(node: "helper", count: 1, lease: longLease, takesParts: true))
            #expect(running.map(\.id) == [split[0].id])
            func states() async throws -> [Download.State] { try await owner.parts(of: download.id).map(\.state) }

            // Paused: the waiting parts at once, the running one asked of its node; the effect is the download's.
            // A resume before the running part's node heard of the pause takes the pause back there too.
            #expect(try await helper.control(.pause, ids: [download.id]) == [download.id: .asked(node: "owner")])
            #expect(try await helper.control(.resume, ids: [download.id]) == [download.id: .done(.active)])
            #expect(try await states() == [.active, .waiting, .waiting])
            let progress = [ClaimProgress(id: split[0].id, epoch: 1, completedBytes: 20)]
            #expect(try await helper.renew(node: "helper", lease: longLease, progress: progress).requested.isEmpty)

            let paused = try await helper.control(.pause, ids: [download.id])
            #expect(paused == [download.id: .asked(node: "owner")])
            #expect(try await states() == [.active, .paused, .paused])
            let renewal = try await helper.renew(node: "helper", lease: longLease, progress: [ClaimProgress(id: split[0].id, epoch: 1, completedBytes: 40)])
            #expect(renewal.requested == [split[0].id: .pause])
            #expect(try await helper.settle(running[0], as: .paused))
            #expect(try await owner.settle(download, as: .paused))
            #expect(try await states() == [.paused, .paused, .paused])
            #expect(try await owner.parts(of: download.id).first?.completedBytes == 40, "what its node flushed is kept")

            // Resumed: the paused parts wait again, keeping their progress.
            #expect(try await helper.control(.resume, ids: [download.id]) == [download.id: .done(.waiting)])
            #expect(try await states() == [.waiting, .waiting, .waiting])

            // A failed part stays failed through a resume (the download is split anew when it runs).
            // A node that does not take parts gets the download itself (to split it, or run it whole).
            let whole = try await owner.claim(ClaimRequest(node: "whole", count: 1, lease: longLease))
            #expect(whole.map(\.id) == [download.id])
            #expect(try await owner.settle(try #require(whole.first), as: .released))
            let owner2 = try #require(try await owner.claim(ClaimRequest(node: "owner", count: 1, lease: longLease, takesParts: true)).first)
            #expect(owner2.id == split[0].id, "parts first")
            #expect(try await owner.settle(owner2, as: .failed("the file changed")))
            _ = try await helper.control(.pause, ids: [download.id])
            _ = try await helper.control(.resume, ids: [download.id])
            #expect(try await states() == [.failed, .waiting, .waiting])

            // Removed: every part that is not.
            #expect(try await helper.control(.remove, ids: [download.id]) == [download.id: .done(.removed)])
            #expect(try await states() == [.removed, .removed, .removed])
            #expect(try await owner.counts() == [.removed: 1])
        }
    }

    @Test(arguments: CatalogueKind.allCases)
    func theFleetsLimitsCountASplitDownloadByItsParts(kind: CatalogueKind) async throws {
        try await withFleet(kind, nodes: 2) { fleet in
            try await fleet[0].add(items(2))
            let download = try #require(try await fleet[0].claim(ClaimRequest(node: "owner", count: 1, lease: longLease, maxActive: 1)).first)
            #expect(try await fleet[0].split(download, into: Self.parts(of: download.entry, 2)))
            // The download that is only watched does not hold the fleet's one place: its first part takes it.
            let first = try await fleet[1].claim(ClaimRequest(node: "helper", count: 2, lease: longLease, maxActive: 1, takesParts: true))
            #expect(first.count == 1 && first[0].entry.parent == download.id)
            #expect(try await fleet[1].claim(ClaimRequest(node: "helper", count: 2, lease: longLease, maxActive: 1, takesParts: true)).isEmpty)
            let perHost = try await fleet[1].claim(ClaimRequest(node: "helper", count: 2, lease: longLease, maxPerHost: 2, takesParts: true))
            #expect(perHost.count == 1 && perHost[0].entry.parent == download.id, "one more per host: the second part")
        }
    }

    /// PostgreSQL's wake-ups are NOTIFYs sent on purpose (SQLite's wake on any commit): the node
    /// watching a split download hears at once that a part ended, and finishes the file without
    /// waiting for its heartbeat.
    @Test func theNodeWatchingASplitDownloadIsWokenWhenAPartEnds() async throws {
        try await withFleet(.postgres, nodes: 2) { fleet in
            let (helper, watcher) = (fleet[0], fleet[1])
            try await helper.add(items(1))
            let download = try #require(try await helper.claim(ClaimRequest(node: "owner", count: 1, lease: longLease)).first)
            #expect(try await helper.split(download, into: Self.parts(of: download.entry, 1)))
            let part = try #require(try await helper.claim(ClaimRequest(node: "helper", count: 1, lease: longLease, takesParts: true)).first)
            let woken = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    var count = 0
                    for await _ in watcher.changes() {
                        count += 1
                        // The first wake-up comes once it listens; then the part ends, on another connection.
                        if count == 1 { _ = try await helper.settle(part, as: .completed(fileName: "f.bin", totalBytes: 100)) }
                        if count == 2 { return true }
                    }
                    return false
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(10))
                    return false
                }
                let first = try await group.next() ?? false
                group.cancelAll()
                return first
            }
            #expect(woken)
        }
    }
}
