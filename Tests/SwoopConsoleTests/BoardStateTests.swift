import SwoopKit
import Testing

@testable import SwoopConsole

@Suite("BoardState")
struct BoardStateTests {
    static func snapshot(_ id: String, total: Int?, done: Int, speed: Double = 0) -> Download {
        Download(id: Download.ID(id), url: "https://h/\(id)", destination: nil, state: .active, totalBytes: total, completedBytes: done, bytesPerSecond: speed)
    }

    /// `#expect` cannot call a mutating method itself.
    func apply(_ event: DownloadEvent, to state: inout BoardState) -> Bool {
        state.apply(event)
    }

    @Test func activeDownloadsKeepTheirStartOrderAndLatestSnapshot() {
        var state = BoardState()
        #expect(apply(.added(Self.snapshot("a", total: nil, done: 0)), to: &state))
        for id in ["b", "c", "d", "e"] { state.apply(.added(Self.snapshot(id, total: nil, done: 0))) }
        #expect(state.waiting.count == 5)
        #expect(apply(.started(Self.snapshot("a", total: 100, done: 0)), to: &state))
        #expect(apply(.started(Self.snapshot("b", total: 200, done: 0)), to: &state))
        #expect(apply(.progress(Self.snapshot("a", total: 100, done: 40, speed: 10)), to: &state))
        // A retry starts `a` again: it keeps its line.
        #expect(apply(.started(Self.snapshot("a", total: 100, done: 40)), to: &state))
        #expect(apply(.progress(Self.snapshot("b", total: 200, done: 50, speed: 5)), to: &state))
        #expect(state.active.map(\.id.rawValue) == ["a", "b"])
        #expect(state.active.map(\.completedBytes) == [40, 50])
        // 210 for a and b, and the three waiting at their average length (150) each, estimated.
        #expect(state.summary() == BoardSummary(
            done: 0, active: 2, waiting: 3, failed: 0, bytesPerSecond: 5, remainingBytes: 210 + 450, remainingIsEstimate: true,
            longestRemainingSeconds: 150.0 / 5
        ))
    }

    @Test func finishedDownloadsLeaveTheBoardAndAreCounted() {
        var state = BoardState()
        for id in ["a", "b", "c", "d"] { state.apply(.started(Self.snapshot(id, total: 10, done: 0))) }
        state.apply(.completed(Self.snapshot("b", total: 10, done: 10)))
        state.apply(.failed(Self.snapshot("c", total: 10, done: 3), SwoopError(.invalidArgument, "x")))
        state.apply(.paused(Self.snapshot("d", total: 10, done: 5)))
        #expect(state.active.map(\.id.rawValue) == ["a"])
        #expect(state.summary() == BoardSummary(done: 1, active: 1, waiting: 0, failed: 1, bytesPerSecond: 0, remainingBytes: 10))
    }

    @Test func oneUnknownLengthMakesTheRemainingBytesUnknown() {
        var state = BoardState()
        state.apply(.started(Self.snapshot("a", total: 10, done: 0, speed: 1)))
        state.apply(.started(Self.snapshot("b", total: nil, done: 5, speed: 2)))
        #expect(state.summary() == BoardSummary(done: 0, active: 2, waiting: 0, failed: 0, bytesPerSecond: 3, remainingBytes: nil, longestRemainingSeconds: 10))
        #expect(BoardState().summary() == BoardSummary(done: 0, active: 0, waiting: 0, failed: 0, bytesPerSecond: 0, remainingBytes: 0))
    }

    @Test func aNoticeUpdatesOnlyAnActiveDownload() {
        var state = BoardState()
        state.apply(.notice(Self.snapshot("a", total: 10, done: 0), "restarting"))
        #expect(state.active.isEmpty)
        state.apply(.started(Self.snapshot("a", total: 10, done: 5)))
        state.apply(.notice(Self.snapshot("a", total: 10, done: 0), "starting over from 0"))
        #expect(state.active.map(\.completedBytes) == [0])
    }

    @Test func waitingCountsAddedAndExpectedDownloadsUntilTheyStartOrEnd() {
        var state = BoardState()
        state.apply(.added(Self.snapshot("a", total: nil, done: 0)))
        state.apply(.added(Self.snapshot("b", total: nil, done: 0)))
        // Resumed downloads get no `added`: the caller expects them. One that started already stays out.
        state.apply(.started(Self.snapshot("c", total: 10, done: 0)))
        let changed = state.expect([Download.ID("c"), Download.ID("d"), Download.ID("a")])
        #expect(changed)
        #expect(state.summary().waiting == 3)
        state.apply(.started(Self.snapshot("a", total: 10, done: 0)))
        state.apply(.paused(Self.snapshot("b", total: 10, done: 0)))
        #expect(state.summary().waiting == 1)
        // A late `added` for a download that already ran does not make it wait again.
        #expect(!apply(.added(Self.snapshot("a", total: nil, done: 0)), to: &state))
        state.apply(.removed(Self.snapshot("d", total: nil, done: 0)))
        #expect(state.summary() == BoardSummary(done: 0, active: 2, waiting: 0, failed: 0, bytesPerSecond: 0, remainingBytes: 20))
    }

    @Test func aDownloadWaitingToRetryHasALineAndIsCountedApart() {
        var state = BoardState()
        state.apply(.added(Self.snapshot("a", total: nil, done: 0)))
        var failing = Self.snapshot("a", total: nil, done: 0)
        failing.retry = Download.Retry(attempt: 1, maxRetries: 5, reason: "connection refused")
        // Refused before it ever started: the retry notice gives it its line.
        #expect(apply(.notice(failing, "connection refused; retrying in 0.5s (1/5)"), to: &state))
        #expect(state.active.map(\.id.rawValue) == ["a"])
        #expect(state.summary() == BoardSummary(done: 0, active: 0, waiting: 0, failed: 0, bytesPerSecond: 0, remainingBytes: nil, retrying: 1))
        state.apply(.started(Self.snapshot("a", total: 10, done: 0)))
        #expect(state.summary().retrying == 0)
        #expect(state.summary().active == 1)
    }

    @Test func theRemainingBytesCountWaitingDownloadsWhenAllTheirLengthsAreKnown() {
        var state = BoardState()
        state.apply(.started(Self.snapshot("a", total: 100, done: 40)))
        state.apply(.added(Self.snapshot("b", total: 50, done: 10)))
        #expect(state.summary().remainingBytes == 60 + 40)
        state.apply(.added(Self.snapshot("c", total: nil, done: 0)))
        // One waiting length unknown: counted at the average length seen (a's 100), an estimate.
        #expect(state.summary().remainingBytes == 60 + 40 + 100)
        #expect(state.summary().remainingIsEstimate)
        state.apply(.removed(Self.snapshot("c", total: nil, done: 0)))
        #expect(state.summary().remainingBytes == 100)
        #expect(!state.summary().remainingIsEstimate)
    }

    /// The ETA of the running downloads alone said "0s" while others waited: a waiting download of
    /// unknown length counts as the average of those finished and running; with none known, the
    /// remaining bytes are unknown.
    @Test func waitingDownloadsOfUnknownLengthAreEstimatedFromTheOthers() {
        var state = BoardState()
        state.apply(.added(Self.snapshot("w", total: nil, done: 0)))
        state.apply(.started(Self.snapshot("a", total: nil, done: 0)))
        #expect(state.summary().remainingBytes == nil)
        state.apply(.progress(Self.snapshot("a", total: 300, done: 300, speed: 100)))
        state.apply(.completed(Self.snapshot("a", total: 300, done: 300)))
        state.apply(.started(Self.snapshot("b", total: 100, done: 90, speed: 10)))
        // b needs 10; w counts as the average of a (300) and b (100).
        #expect(state.summary() == BoardSummary(
            done: 1, active: 1, waiting: 1, failed: 0, bytesPerSecond: 10, remainingBytes: 10 + 200, remainingIsEstimate: true,
            longestRemainingSeconds: 1
        ))
        let line = ProgressBoard(width: 120).summaryLine(state.summary())
        #expect(line == "[done 1 · active 1 · waiting 1 · failed 0]  10 B/s  ETA ~21s")
    }

    /// The whole ends no sooner than its slowest running download at its own speed (held by its own
    /// rate limit, say), whatever the total speed shared out would say.
    @Test func theSummaryETAIsNeverSoonerThanTheSlowestRunningDownload() {
        var state = BoardState()
        state.apply(.started(Self.snapshot("slow", total: 1000, done: 0, speed: 10)))
        state.apply(.started(Self.snapshot("fast", total: 1000, done: 0, speed: 990)))
        #expect(state.summary().longestRemainingSeconds == 100)
        // 2000 bytes at 1000 B/s would be 2s; the slow one needs 1m40s.
        let line = ProgressBoard(width: 120).summaryLine(state.summary())
        #expect(line.hasSuffix("ETA 1m40s"), "\(line)")
    }
}
