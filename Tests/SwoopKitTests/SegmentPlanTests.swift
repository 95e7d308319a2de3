import Testing

@testable import SwoopKit

@Suite("SegmentPlan: splitting a file over connections")
struct SegmentPlanTests {
    static func ranges(_ plan: SegmentPlan) -> [[Int]] {
        plan.segments.map { [$0.start, $0.end, $0.written] }
    }

    @Test(arguments: [
        // total, connections, min split → segment boundaries
        (100, 4, 10, [[0, 25, 0], [25, 50, 0], [50, 75, 0], [75, 100, 0]]),
        (100, 3, 10, [[0, 33, 0], [33, 66, 0], [66, 100, 0]]),
        (100, 8, 30, [[0, 33, 0], [33, 66, 0], [66, 100, 0]]),
        (100, 8, 60, [[0, 100, 0]]),
        (100, 1, 1, [[0, 100, 0]]),
        (5, 4, 1, [[0, 1, 0], [1, 2, 0], [2, 3, 0], [3, 5, 0]]),
        (0, 4, 1, [[0, 0, 0]]),
    ])
    func initialSplit(total: Int, connections: Int, minSplit: Int, expected: [[Int]]) {
        let plan = SegmentPlan.initial(total: total, connections: connections, minSplitSize: minSplit)
        #expect(Self.ranges(plan) == expected)
        #expect(plan.isConsistent)
    }

    @Test(arguments: [
        // total, pieces of 10 asked before the length was known → segment boundaries (4 connections, min split 10)
        (100, 4, [[0, 10, 0], [10, 20, 0], [20, 30, 0], [30, 40, 0], [40, 55, 0], [55, 70, 0], [70, 85, 0], [85, 100, 0]]),
        (100, 1, [[0, 10, 0], [10, 32, 0], [32, 54, 0], [54, 76, 0], [76, 100, 0]]),
        (40, 4, [[0, 10, 0], [10, 20, 0], [20, 30, 0], [30, 40, 0]]),
        // The last piece ends with the file; pieces past it are none of the plan's.
        (25, 4, [[0, 10, 0], [10, 20, 0], [20, 25, 0]]),
        (45, 4, [[0, 10, 0], [10, 20, 0], [20, 30, 0], [30, 40, 0], [40, 45, 0]]),
    ])
    func initialSplitAfterPiecesAskedEarly(total: Int, pieces: Int, expected: [[Int]]) {
        let plan = SegmentPlan.initial(total: total, pieces: pieces, pieceSize: 10, connections: 4, minSplitSize: 10)
        #expect(Self.ranges(plan) == expected)
        #expect(plan.isConsistent)
    }

    @Test func claimingGivesFreeSegmentsInOrder() {
        var plan = SegmentPlan.initial(total: 100, connections: 4, minSplitSize: 10)
        #expect(plan.unclaimed(busy: [])?.start == 0)
        #expect(plan.unclaimed(busy: [0, 25])?.start == 50)
        plan.recordWrite(segmentAt: 50, bytes: 25)
        #expect(plan.unclaimed(busy: [0, 25])?.start == 75)
        #expect(plan.unclaimed(busy: [0, 25, 75]) == nil)
    }

    @Test func stealingTakesHalfOfTheLargestRemainderBeyondWhatIsReserved() throws {
        var plan = SegmentPlan.initial(total: 100, connections: 2, minSplitSize: 10)
        plan.recordWrite(segmentAt: 0, bytes: 40)   // [0,50): 10 left
        plan.recordWrite(segmentAt: 50, bytes: 10)  // [50,100): 40 left, 8 more reserved
        let taken = plan.steal(busy: [0, 50], reservedUpTo: [50: 68], minSplitSize: 10)
        let stolen = try #require(taken)
        // From 68, 32 left: the thief takes [84, 100).
        #expect(stolen == Segment(start: 84, end: 100))
        #expect(Self.ranges(plan) == [[0, 50, 40], [50, 84, 10], [84, 100, 0]])
        #expect(plan.isConsistent)
        // Halves smaller than the minimum are not worth a connection.
        let tooSmall = plan.steal(busy: [0, 50, 84], reservedUpTo: [50: 68], minSplitSize: 10)
        #expect(tooSmall == nil)
        // Idle segments are claimed, not stolen.
        let idle = plan.steal(busy: [], reservedUpTo: [:], minSplitSize: 1)
        #expect(idle == nil)
    }

    @Test func aStealLeavesTheVictimWhatItHasInFlight() throws {
        // [0, 100) and [100, 200), each 20 written; the second's connection has 50 in flight.
        var plan = SegmentPlan(total: 200, segments: [Segment(start: 0, end: 100, written: 20), Segment(start: 100, end: 200, written: 20)])
        let first = plan.steal(busy: [0, 100], reservedUpTo: [:], keeps: [100: 50], minSplitSize: 10)
        let taken = try #require(first)
        // The first gives half of its 80 (40, from 60); the second only 30 (from 170): the first is split.
        #expect(taken == Segment(start: 60, end: 100))
        // What the second keeps moves its split point past the half: [120 + 50, 200).
        let second = plan.steal(busy: [0, 60, 100], reservedUpTo: [60: 60], keeps: [100: 50], minSplitSize: 10)
        #expect(second == Segment(start: 170, end: 200))
        #expect(Self.ranges(plan) == [[0, 60, 20], [60, 100, 0], [100, 170, 20], [170, 200, 0]])
        #expect(plan.isConsistent)
    }

    @Test(arguments: [
        // left beyond the position, in flight, min split → the stolen start (nil: no steal)
        (80, 0, 10, 60 as Int?),     // half, as without a pace
        (80, 30, 10, 60),            // in flight within the half: the half
        (80, 50, 10, 70),            // past the half: what is beyond it
        (80, 70, 10, 90),            // 10 left beyond: exactly the minimum
        (80, 71, 10, nil),           // 9 left beyond: not worth a connection
        (80, 200, 10, nil),          // all of it in flight: nothing to take
        (19, 0, 10, nil),            // a half under the minimum, as before
    ])
    func whatIsInFlightIsNeverTaken(left: Int, inFlight: Int, minSplit: Int, expected: Int?) {
        var plan = SegmentPlan(total: 100, segments: [Segment(start: 0, end: 100, written: 100 - left)])
        let taken = plan.steal(busy: [0], reservedUpTo: [:], keeps: [0: inFlight], minSplitSize: minSplit)
        #expect(taken?.start == expected)
        #expect(taken?.end == (expected == nil ? nil : 100))
        #expect(plan.isConsistent)
    }

    @Test func writesAreCappedAtTheSegmentEndAndSyncsAtWhatWasWritten() {
        var plan = SegmentPlan.initial(total: 100, connections: 2, minSplitSize: 10)
        plan.recordWrite(segmentAt: 0, bytes: 70)
        plan.recordWrite(segmentAt: 50, bytes: 20)
        #expect(plan.segment(at: 0)?.written == 50)
        #expect(plan.completedBytes == 70)
        plan.recordSynced([0: 30, 50: 99])
        #expect(plan.segment(at: 0)?.synced == 30)
        #expect(plan.segment(at: 50)?.synced == 20)
        #expect(plan.syncedBytes == 50)
        #expect(!plan.isComplete)
        plan.recordWrite(segmentAt: 50, bytes: 30)
        #expect(plan.isComplete)
    }

    @Test func afterARebootOnlyFlushedBytesAreTrusted() {
        var plan = SegmentPlan.initial(total: 100, connections: 2, minSplitSize: 10)
        plan.recordWrite(segmentAt: 0, bytes: 40)
        plan.recordWrite(segmentAt: 50, bytes: 30)
        plan.recordSynced([0: 10, 50: 30])
        #expect(plan.trusted(sameBoot: true).completedBytes == 70)
        let rebooted = plan.trusted(sameBoot: false)
        #expect(rebooted.segments.map(\.written) == [10, 30])
        #expect(rebooted.isConsistent)
    }

    @Test(arguments: [
        [Segment(start: 0, end: 50), Segment(start: 60, end: 100)],           // gap
        [Segment(start: 0, end: 60), Segment(start: 50, end: 100)],           // overlap
        [Segment(start: 0, end: 50), Segment(start: 50, end: 90)],            // short
        [Segment(start: 0, end: 50, written: 51), Segment(start: 50, end: 100)],  // overfull
        [Segment(start: 0, end: 50, written: 10, synced: 20), Segment(start: 50, end: 100)],  // synced > written
        [Segment(start: 0, end: 100, written: -1)],
    ])
    func inconsistentSavedSegmentsAreRejected(_ segments: [Segment]) {
        #expect(!SegmentPlan(total: 100, segments: segments).isConsistent)
    }

    @Test(arguments: [2, 3, 5, 8, 16])
    func stealingUntilDoneKeepsTheCoverExact(connections: Int) {
        // Simulate connections that write at different speeds and steal when idle.
        var plan = SegmentPlan.initial(total: 10_000, connections: connections, minSplitSize: 50)
        var owner: [Int: Int] = [:]   // connection → segment start
        var rounds = 0
        while !plan.isComplete && rounds < 10_000 {
            rounds += 1
            for connection in 0..<connections {
                if let start = owner[connection], let segment = plan.segment(at: start), !segment.isFinished {
                    plan.recordWrite(segmentAt: start, bytes: connection == 0 ? 1 : 17)
                    continue
                }
                owner[connection] = nil
                let busy = Set(owner.values)
                if let free = plan.unclaimed(busy: busy) {
                    owner[connection] = free.start
                } else if let stolen = plan.steal(busy: busy, reservedUpTo: [:], minSplitSize: 50) {
                    owner[connection] = stolen.start
                }
            }
            #expect(plan.isConsistent)
        }
        #expect(plan.isComplete)
        // The slow connection (1 byte a round) did not hold up the end.
        #expect(rounds < 10_000 / connections)
    }
}
