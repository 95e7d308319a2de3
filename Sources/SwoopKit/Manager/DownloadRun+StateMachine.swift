/// The manager's life cycle of one run of one download, from the moment the queue hands it to
/// ``DownloadManager/run()`` (or ``DownloadManager/download(_:)`` starts it) to the moment it is
/// settled. Pure: each input returns what the manager must do; the manager does the I/O.
///
/// ```
/// handedOver ──begin──▶ running ──stopTransfer(intent)──▶ stopping(intent)
///     │  │                 │                                  │
///     │  └─stoppedByCaller─▶ stoppedBeforeStart               │
///     │                 │      └──────────────ended───────────┴──▶ settled
///     │                 └─begin─▶ settled
///     └─failedToBegin / heldElsewhere─▶ settled
/// ```
///
/// A run whose lock another process holds (``heldElsewhere()``) ends without an event: the
/// download waits for that process and is handed over again later, a new run that begins knowing
/// it waited (``begin(found:afterWaiting:)``).
///
/// Every run ends with exactly one terminal event: the transfer's own when it sent one (noted by
/// ``event(_:)``), else the one ``ended(_:)`` or ``begin(found:)`` asks the manager to publish.
struct DownloadRun: Sendable {
    /// What to do with a running download once its transfer has stopped.
    enum StopIntent: Sendable, Hashable {
        case pause
        /// Keep the record as `removed` and delete the part file.
        case cancel
        /// Delete the record (and, when asked, the files).
        case remove(deletingFile: Bool)
    }

    enum State: Sendable, Hashable {
        /// The queue handed it over; its transfer has not begun.
        case handedOver
        /// Paused, cancelled or removed by the caller after the hand-over, before its transfer
        /// began: the caller changed the record and published the event.
        case stoppedBeforeStart
        /// The transfer runs. `terminalSent`: it published its terminal event.
        case running(terminalSent: Bool)
        /// The transfer was told to stop and what to do then.
        case stopping(StopIntent, terminalSent: Bool)
        /// Over: the manager has counted it and subscribers have heard how it ended.
        case settled
    }

    /// What the manager does when the run begins, given the record it read under the lock.
    enum BeginAction: Sendable, Hashable {
        /// Start the transfer.
        case start
        /// Another process paused or removed it while it waited: count it stopped and publish the
        /// event of the state it is in (`removed` when the record is gone).
        case announceStopped
        /// Settle without a word: its event is out already (stopped before start).
        case settleQuietly
        /// The process it waited for stopped or failed it (`interrupted`, `failed`): put it back in
        /// line (``DownloadStateMachine``'s resume), then start the transfer here.
        case takeOver
    }

    /// How a run that ended is counted and announced.
    enum Settlement: Sendable {
        /// It completed; publish ``DownloadEvent/alreadyComplete(_:)`` with this snapshot when given.
        case completed(alreadyComplete: Download?)
        /// It stopped at a request (pause, Ctrl-C, another process). `announce`: the transfer did
        /// not say so itself, so publish `paused` (or `removed` when the record is gone).
        case stopped(announce: Bool)
        /// It failed; publish the failure when the transfer did not (`announce`).
        case failed(SwoopError, announce: Bool)
        /// Mark the record removed, delete its part file and publish `removed` (a cancel).
        case cancel
        /// Delete the record (and the files, when asked) and publish `removed`.
        case remove(deletingFile: Bool)
    }

    private(set) var state: State

    /// Whether a transfer runs (or was told to stop and has not ended).
    var isTransferring: Bool {
        switch state {
        case .running, .stopping: return true
        case .handedOver, .stoppedBeforeStart, .settled: return false
        }
    }

    /// How its transfer records a stop: `pause` when the caller stopped it (a pause, or a cancel
    /// or remove, which changes the record again once it ended: should the process die first, the
    /// download stays paused, not resumed by a bare resume), else `interrupt` (the process or the
    /// task is stopping).
    var stopRequest: DownloadStateMachine.Request {
        if case .stopping = state { return .pause }
        return .interrupt
    }

    /// A run the queue handed over.
    static func handedOver() -> DownloadRun { DownloadRun(state: .handedOver) }

    /// A run whose transfer starts at once (a direct download).
    static func started() -> DownloadRun { DownloadRun(state: .running(terminalSent: false)) }

    /// The run begins: `found` is the record's state, read under the download's lock (`nil`: gone).
    ///
    /// - Parameter afterWaiting: Another process held the lock at an earlier turn, and this one
    ///   waited for it: what that process left interrupted or failed is taken over, not announced.
    mutating func begin(found: Download.State?, afterWaiting: Bool = false) -> BeginAction {
        switch state {
        case .stoppedBeforeStart:
            state = .settled
            return .settleQuietly
        case .handedOver:
            if afterWaiting, found == .interrupted || found == .failed {
                state = .running(terminalSent: false)
                return .takeOver
            }
            guard let found, found == .waiting || found == .active || found == .completed else {
                state = .settled
                return .announceStopped
            }
            state = .running(terminalSent: false)
            return .start
        case .running, .stopping, .settled:
            // Begun once already: nothing starts twice.
            return .settleQuietly
        }
    }

    /// The run could not begin (the record cannot be read or run).
    ///
    /// - Returns: Whether to publish the failure (not when its event is out already).
    mutating func failedToBegin() -> Bool {
        defer { state = .settled }
        return state == .handedOver
    }

    /// Another process holds the download's lock: this run ends without an event.
    ///
    /// - Returns: Whether the download waits for that process (not when the caller stopped it
    ///   before its run began: its event is out already).
    mutating func heldElsewhere() -> Bool {
        defer { state = .settled }
        return state == .handedOver
    }

    /// A caller asks the transfer to stop, and what to do once it has. Returns `false`, changing
    /// nothing, when no transfer runs: the caller then stops the download itself, under its lock,
    /// and reports that with ``stoppedByCaller()`` once it succeeded.
    mutating func stopTransfer(_ intent: StopIntent) -> Bool {
        switch state {
        case .running(let sent), .stopping(_, let sent):
            state = .stopping(intent, terminalSent: sent)
            return true
        case .handedOver, .stoppedBeforeStart, .settled:
            return false
        }
    }

    /// The caller stopped the download itself (its record changed under the lock, its event out): a
    /// run the queue handed over but that has not begun settles quietly when it does.
    mutating func stoppedByCaller() {
        if state == .handedOver { state = .stoppedBeforeStart }
    }

    /// The transfer published `event`. Returns whether subscribers get it: a `paused` event is
    /// held back when the download is being cancelled or removed (its `removed` follows).
    mutating func event(_ event: DownloadEvent) -> Bool {
        guard event.isTerminal else { return true }
        switch state {
        case .stopping(let intent, _):
            // Held back, so not sent: the settlement of the cancel or remove announces `removed`.
            if case .paused = event, intent != .pause { return false }
            state = .stopping(intent, terminalSent: true)
        case .running:
            state = .running(terminalSent: true)
        case .handedOver, .stoppedBeforeStart, .settled:
            break
        }
        return true
    }

    /// The transfer ended with `result`: how the run is counted and announced.
    mutating func ended(_ result: Result<DownloadOutcome, SwoopError>) -> Settlement {
        let intent: StopIntent?
        let sent: Bool
        switch state {
        case .running(let terminalSent):
            (intent, sent) = (nil, terminalSent)
        case .stopping(let stopIntent, let terminalSent):
            (intent, sent) = (stopIntent, terminalSent)
        case .handedOver, .stoppedBeforeStart, .settled:
            (intent, sent) = (nil, true)
        }
        state = .settled
        switch (intent, result) {
        case (.remove(let deletingFile)?, _):
            return .remove(deletingFile: deletingFile)
        case (.cancel?, .failure):
            return .cancel
        case (_, .success(.alreadyComplete(let download))):
            // A cancel that came as the download completed is too late: it stays completed.
            return .completed(alreadyComplete: download)
        case (_, .success(.downloaded)):
            return .completed(alreadyComplete: nil)
        case (_, .failure(let error)) where error.code == .cancelled:
            return .stopped(announce: !sent)
        case (_, .failure(let error)):
            return .failed(error, announce: !sent)
        }
    }
}
