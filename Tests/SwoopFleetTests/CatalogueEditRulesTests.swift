import SwoopKit
import Testing

/// The pure decisions behind forgetting, moving and revising a fleet's downloads, every case.
@Suite("CatalogueRules: forget, move and revise")
struct CatalogueEditRulesTests {
    @Test func onlyDownloadsStoppedForGoodAreForgotten() {
        let forgotten = Download.State.allCases.filter(CatalogueRules.forgets)
        #expect(Set(forgotten) == [.completed, .failed, .removed])
    }

    @Test func sourcesAndOptionsChangeInTheWaitingListOrWhereTheDownloadRuns() {
        for state in Download.State.allCases {
            let expected = state == .waiting || state == .paused || state == .interrupted
            #expect(CatalogueRules.revises(state, node: "a", asker: "b") == expected, "\(state)")
            #expect(CatalogueRules.revises(state, node: "a", asker: nil) == expected, "\(state)")
        }
        #expect(CatalogueRules.revises(.active, node: "a", asker: "a"))
        #expect(!CatalogueRules.revises(.active, node: nil, asker: nil))
        #expect(!CatalogueRules.revises(.completed, node: "a", asker: "a"))
    }

    /// aria2's changePosition: from the start, from the download's place, from the end; clamped.
    @Test(arguments: [
        (QueueAnchor.start, 0, 3, 5, 0), (.start, 2, 3, 5, 2), (.start, 9, 3, 5, 4), (.start, -1, 3, 5, 0),
        (.current, -1, 3, 5, 2), (.current, 1, 3, 5, 4), (.current, 5, 3, 5, 4), (.current, -9, 3, 5, 0),
        (.end, 0, 0, 5, 4), (.end, -1, 0, 5, 3), (.end, 3, 0, 5, 4), (.end, -9, 0, 5, 0),
        (.start, Int.max, 0, 5, 4), (.current, Int.min, 2, 5, 0), (.end, Int.min, 1, 1, 0),
    ])
    func anIndexIsCountedFromItsAnchorAndClamped(anchor: QueueAnchor, offset: Int, current: Int, count: Int, expected: Int) {
        #expect(CatalogueRules.index(moving: offset, from: anchor, current: current, count: count) == expected)
    }

    @Test func aMovedDownloadTakesAPlaceBetweenItsNeighbours() {
        let slot = { (priority: Int, position: Int) in QueueSlot(priority: priority, position: position) }
        let step = CatalogueRules.positionStep
        // Alone in the list: nowhere to go.
        #expect(CatalogueRules.placement(between: nil, and: nil, end: 10) == nil)
        // First: a step before the first, at its priority.
        #expect(CatalogueRules.placement(between: nil, and: slot(3, 7 * step), end: 10 * step) == Placement(slot: slot(3, 6 * step)))
        // Last: after every download, at the last one's priority.
        #expect(CatalogueRules.placement(between: slot(-2, 4 * step), and: nil, end: 10 * step) == Placement(slot: slot(-2, 10 * step)))
        #expect(CatalogueRules.placement(between: slot(0, 12 * step), and: nil, end: 10 * step) == Placement(slot: slot(0, 13 * step)))
        // Between two priorities: a step before the first of the lower one.
        #expect(CatalogueRules.placement(between: slot(5, 8), and: slot(0, 2 * step), end: 10) == Placement(slot: slot(0, step)))
        // Between two of one priority with room: half-way.
        #expect(CatalogueRules.placement(between: slot(0, 2 * step), and: slot(0, 3 * step), end: 10) == Placement(slot: slot(0, 2 * step + step / 2)))
        #expect(CatalogueRules.placement(between: slot(0, 4), and: slot(0, 6), end: 10) == Placement(slot: slot(0, 5)))
        // Next to each other: those up to the first go a step lower, and it takes the middle of the room made.
        #expect(
            CatalogueRules.placement(between: slot(1, 4), and: slot(1, 5), end: 10)
                == Placement(slot: slot(1, 4 - step / 2), shift: Placement.Shift(priority: 1, through: 4, by: step))
        )
        // Ten moves between two neighbours added one after the other before a shift is needed.
        var (low, high) = (slot(0, 0), slot(0, step))
        for _ in 0..<10 {
            let placed = CatalogueRules.placement(between: low, and: high, end: 10 * step)
            #expect(placed?.shift == nil)
            high = placed?.slot ?? high
        }
        #expect(high.position > low.position)
    }

    @Test func anActiveDownloadWhoseLeaseRanOutIsSeenAsInterrupted() {
        for state in Download.State.allCases {
            #expect(CatalogueRules.seen(state, leaseExpired: false) == state)
            #expect(CatalogueRules.seen(state, leaseExpired: true) == (state == .active ? .interrupted : state))
        }
    }
}
