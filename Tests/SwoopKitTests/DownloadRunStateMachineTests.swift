import Foundation
import Testing

@testable import SwoopKit

/// `DownloadRun`: the manager's life cycle of one run, input by input from every state.
@Suite("DownloadRun state machine")
struct DownloadRunStateMachineTests {
    typealias State = DownloadRun.State

    static let snapshot = Download(id: .init("r"), url: "http://h/f", destination: nil, state: .completed, totalBytes: 1, completedBytes: 1)
    static let cancelled = SwoopError(.cancelled, "interrupted")
    static let failure = SwoopError(.httpStatus, "HTTP 404 Not Found from http://h/f", status: 404)

    /// A run brought into `state` by the inputs that lead there.
    static func run(in state: State) -> DownloadRun {
        var run = DownloadRun.handedOver()
        switch state {
        case .handedOver:
            break
        case .stoppedBeforeStart:
            run.stoppedByCaller()
        case .running(let sent):
            _ = run.begin(found: .waiting)
            if sent { _ = run.event(.completed(snapshot)) }
        case .stopping(let intent, let sent):
            _ = run.begin(found: .waiting)
            if sent { _ = run.event(.failed(snapshot, failure)) }
            _ = run.stopTransfer(intent)
        case .settled:
            _ = run.begin(found: nil)
        }
        #expect(run.state == state)
        return run
    }

    static let states: [State] = [
        .handedOver, .stoppedBeforeStart, .running(terminalSent: false), .running(terminalSent: true),
        .stopping(.pause, terminalSent: false), .stopping(.cancel, terminalSent: false),
        .stopping(.remove(deletingFile: true), terminalSent: false), .stopping(.cancel, terminalSent: true), .settled,
    ]

    // MARK: begin

    @Test(arguments: [Download.State.waiting, .active, .completed])
    func aHandedOverRunWhoseRecordMayRunStarts(found: Download.State) {
        var run = Self.run(in: .handedOver)
        let answer = run.begin(found: found)
        #expect(answer == .start)
        #expect(run.state == .running(terminalSent: false))
    }

    @Test(arguments: [Download.State?.none, .paused, .removed, .failed])
    func aHandedOverRunStoppedElsewhereIsAnnouncedAndSettled(found: Download.State?) {
        var run = Self.run(in: .handedOver)
        let answer = run.begin(found: found)
        #expect(answer == .announceStopped)
        #expect(run.state == .settled)
    }

    @Test func aRunStoppedBeforeStartSettlesQuietlyWhateverTheRecordSays() {
        for found in [Download.State?.none, .waiting, .paused] {
            var run = Self.run(in: .stoppedBeforeStart)
            let answer = run.begin(found: found)
            #expect(answer == .settleQuietly)
            #expect(run.state == .settled)
        }
    }

    @Test func beginningARunThatBeganAlreadyStartsNothing() {
        for state in Self.states where state != .handedOver && state != .stoppedBeforeStart {
            var run = Self.run(in: state)
            let answer = run.begin(found: .waiting)
            #expect(answer == .settleQuietly)
            #expect(run.state == state)
        }
    }

    @Test func aFailureToBeginIsPublishedOnlyForAHandedOverRun() {
        for state in Self.states {
            var run = Self.run(in: state)
            let answer = run.failedToBegin()
            #expect(answer == (state == .handedOver))
            #expect(run.state == .settled)
        }
    }

    @Test func aRunWhoseLockIsHeldElsewhereWaitsOnlyWhenHandedOver() {
        for state in Self.states {
            var run = Self.run(in: state)
            let waits = run.heldElsewhere()
            #expect(waits == (state == .handedOver), "\(state)")
            #expect(run.state == .settled)
        }
    }

    /// After waiting for another process, what it left interrupted or failed is taken over here;
    /// what it paused or removed is announced, as without the wait.
    @Test(arguments: [
        (Download.State?.some(.interrupted), DownloadRun.BeginAction.takeOver), (.failed, .takeOver), (.waiting, .start),
        (.active, .start), (.completed, .start), (.paused, .announceStopped), (.removed, .announceStopped), (nil, .announceStopped),
    ])
    func aRunThatWaitedTakesOverWhatTheOtherProcessLeft(found: Download.State?, expected: DownloadRun.BeginAction) {
        var run = Self.run(in: .handedOver)
        #expect(run.begin(found: found, afterWaiting: true) == expected)
        #expect(run.state == (expected == .announceStopped ? .settled : .running(terminalSent: false)))
        // Without the wait, an interrupted record is another process's stop: announced.
        var plain = Self.run(in: .handedOver)
        #expect(plain.begin(found: .interrupted) == .announceStopped)
    }

    @Test func aWaitingDownloadsNextTurnComesSoonThenEveryTwoSeconds() {
        var held = HeldDownload(key: DownloadKey(url: "http://h/f", directory: "/d", requestedName: ""))
        var delays: [Duration] = []
        for _ in 0..<7 {
            held.attempts += 1
            delays.append(held.retryDelay)
        }
        #expect(delays == [200, 400, 800, 1_600, 2_000, 2_000, 2_000].map { .milliseconds($0) })
    }

    // MARK: stop

    @Test func stoppingARunByState() {
        for state in Self.states {
            var run = Self.run(in: state)
            let cancelsTransfer = run.stopTransfer(.cancel)
            switch state {
            case .handedOver, .stoppedBeforeStart, .settled:
                // No transfer: nothing changes until the caller has stopped it itself.
                #expect(!cancelsTransfer)
                #expect(run.state == state)
                run.stoppedByCaller()
                #expect(run.state == (state == .settled ? .settled : .stoppedBeforeStart))
            case .running(let sent), .stopping(_, let sent):
                #expect(cancelsTransfer)
                #expect(run.state == .stopping(.cancel, terminalSent: sent))
                run.stoppedByCaller()
                #expect(run.state == .stopping(.cancel, terminalSent: sent))
            }
        }
    }

    // MARK: events

    @Test func progressIsAlwaysPublishedAndChangesNothing() {
        for state in Self.states {
            var run = Self.run(in: state)
            let answer = run.event(.progress(Self.snapshot))
            #expect(answer)
            #expect(run.state == state)
        }
    }

    @Test func aTerminalEventIsNotedOnce() {
        var run = Self.run(in: .running(terminalSent: false))
        let answer = run.event(.completed(Self.snapshot))
        #expect(answer)
        #expect(run.state == .running(terminalSent: true))
    }

    @Test(arguments: [DownloadRun.StopIntent.cancel, .remove(deletingFile: false)])
    func pausedIsHeldBackWhenTheRunIsCancelledOrRemoved(intent: DownloadRun.StopIntent) {
        var run = Self.run(in: .stopping(intent, terminalSent: false))
        let answer = run.event(.paused(Self.snapshot))
        #expect(!answer)
        // Held back, so not sent: the settlement announces `removed`.
        #expect(run.state == .stopping(intent, terminalSent: false))
    }

    @Test func pausedIsPublishedWhenTheRunIsPaused() {
        var run = Self.run(in: .stopping(.pause, terminalSent: false))
        let answer = run.event(.paused(Self.snapshot))
        #expect(answer)
        #expect(run.state == .stopping(.pause, terminalSent: true))
    }

    // MARK: ended

    @Test func aRunThatCompletedCountsCompletedWhateverTheIntentButRemove() {
        for state in [State.running(terminalSent: true), .stopping(.pause, terminalSent: true), .stopping(.cancel, terminalSent: true)] {
            var run = Self.run(in: state)
            guard case .completed(nil) = run.ended(.success(.downloaded(Self.snapshot))) else {
                Issue.record("\(state): not completed")
                continue
            }
            #expect(run.state == .settled)
        }
        var already = Self.run(in: .running(terminalSent: false))
        guard case .completed(let announced?) = already.ended(.success(.alreadyComplete(Self.snapshot))) else {
            Issue.record("already complete is announced")
            return
        }
        #expect(announced == Self.snapshot)
    }

    @Test func aRemoveIntentDeletesWhateverTheResult() {
        for result in [Result<DownloadOutcome, SwoopError>.success(.downloaded(Self.snapshot)), .failure(Self.cancelled)] {
            var run = Self.run(in: .stopping(.remove(deletingFile: true), terminalSent: false))
            guard case .remove(deletingFile: true) = run.ended(result) else {
                Issue.record("not removed after \(result)")
                continue
            }
        }
    }

    @Test func aCancelIntentMarksTheRecordRemovedWhenTheTransferStopped() {
        var run = Self.run(in: .stopping(.cancel, terminalSent: true))
        guard case .cancel = run.ended(.failure(Self.cancelled)) else {
            Issue.record("not cancelled")
            return
        }
    }

    @Test(arguments: [false, true])
    func aStoppedRunIsAnnouncedOnlyWhenTheTransferWasSilent(sent: Bool) {
        for state in [State.running(terminalSent: sent), .stopping(.pause, terminalSent: sent)] {
            var run = Self.run(in: state)
            guard case .stopped(let announce) = run.ended(.failure(Self.cancelled)) else {
                Issue.record("\(state): not stopped")
                continue
            }
            #expect(announce == !sent)
        }
    }

    @Test(arguments: [false, true])
    func aFailedRunIsAnnouncedOnlyWhenTheTransferWasSilent(sent: Bool) {
        var run = Self.run(in: .running(terminalSent: sent))
        guard case .failed(let error, let announce) = run.ended(.failure(Self.failure)) else {
            Issue.record("not failed")
            return
        }
        #expect(error.status == 404)
        #expect(announce == !sent)
        #expect(run.state == .settled)
    }
}

/// `DownloadRuns`: the machines under one lock, as the manager's control paths use them.
@Suite("DownloadRuns")
struct DownloadRunsTests {
    let id = Download.ID("r")

    @Test func stoppingARunThatHasNotBegunChangesNothingUntilTheCallerHasStoppedIt() {
        let runs = DownloadRuns()
        runs.handOver(id)
        // The caller's change under the lock may still fail (another process runs it): the run
        // must then begin as if nothing happened.
        #expect(!runs.stopTransfer(id, .pause))
        #expect(runs.begin(id, found: .waiting, since: Date()) == .start)

        let stopped = DownloadRuns()
        stopped.handOver(id)
        #expect(!stopped.stopTransfer(id, .cancel))
        stopped.stoppedByCaller(id)
        #expect(stopped.begin(id, found: .removed, since: Date()) == .settleQuietly)
        #expect(!stopped.contains(id))
    }

    @Test func aRecordHasOneRunAtATime() {
        let runs = DownloadRuns()
        #expect(runs.startDirect(id, since: Date()))
        #expect(!runs.startDirect(id, since: Date()))
        #expect(!runs.handOver(id))
        #expect(runs.isRunning(id))
        #expect(runs.stopTransfer(id, .pause))
        guard case .stopped(announce: true) = runs.ended(id, .failure(SwoopError(.cancelled, "interrupted"))) else {
            Issue.record("a paused run with no event of its own is announced")
            return
        }
        #expect(!runs.contains(id))
        #expect(runs.handOver(id))
    }
}
