import Foundation
import NIOConcurrencyHelpers

/// The manager's runs, each a ``DownloadRun`` state machine with its transfer's task and latest
/// snapshot, under one lock: the transfers publish their events from outside the actor, and the
/// machine decides, at that moment, whether subscribers get them.
final class DownloadRuns: Sendable {
    private struct Entry {
        var run: DownloadRun
        var task: Task<DownloadOutcome, any Error>?
        var snapshot: Download?
        /// The record as the run read it under the lock when it began: what does not change while
        /// it runs (directory, names, mirrors) for readers that must not go to the store each time.
        var record: DownloadRecord?
        /// When the run went for the download's lock: controls posted before were meant for an
        /// earlier run.
        var since: Date?
    }

    private let entries = NIOLockedValueBox<[Download.ID: Entry]>([:])

    /// The queue handed `id` over to `run()`. Returns `false` (changing nothing) when `id` has a
    /// run already (a direct download of the same record).
    @discardableResult
    func handOver(_ id: Download.ID) -> Bool {
        entries.withLockedValue { entries in
            guard entries[id] == nil else { return false }
            entries[id] = Entry(run: .handedOver())
            return true
        }
    }

    /// A direct download's run, whose transfer starts at once. Returns `false` (changing nothing)
    /// when `id` has a run already.
    ///
    /// - Parameter since: When it went for the download's lock.
    func startDirect(_ id: Download.ID, since: Date) -> Bool {
        entries.withLockedValue { entries in
            guard entries[id] == nil else { return false }
            entries[id] = Entry(run: .started(), since: since)
            return true
        }
    }

    /// Whether any run has a transfer going (or stopping).
    var hasTransfers: Bool {
        entries.withLockedValue { $0.values.contains { $0.run.isTransferring } }
    }

    /// When the run of `id` whose transfer runs went for the lock, or `nil` when none runs.
    func transferringSince(_ id: Download.ID) -> Date? {
        entries.withLockedValue { entries in
            guard let entry = entries[id], entry.run.isTransferring else { return nil }
            return entry.since
        }
    }

    /// Whether `id` has a run (handed over, transferring, or stopping).
    func contains(_ id: Download.ID) -> Bool {
        entries.withLockedValue { $0[id] != nil }
    }

    /// The run begins with the record's state as read under its lock (`nil`: gone).
    ///
    /// - Parameter since: When it went for the lock.
    func begin(
        _ id: Download.ID, found: Download.State?, record: DownloadRecord? = nil, since: Date, afterWaiting: Bool = false
    ) -> DownloadRun.BeginAction {
        entries.withLockedValue { entries in
            guard var entry = entries[id] else { return .settleQuietly }
            entry.since = since
            entry.record = record
            let action = entry.run.begin(found: found, afterWaiting: afterWaiting)
            if action == .start || action == .takeOver { entries[id] = entry } else { entries[id] = nil }
            return action
        }
    }

    /// The run could not begin. Returns whether to publish the failure.
    func failedToBegin(_ id: Download.ID) -> Bool {
        entries.withLockedValue { entries in
            guard var entry = entries.removeValue(forKey: id) else { return false }
            return entry.run.failedToBegin()
        }
    }

    /// Another process holds `id`'s lock: the run ends. Returns whether the download waits for it.
    func heldElsewhere(_ id: Download.ID) -> Bool {
        entries.withLockedValue { entries in
            guard var entry = entries.removeValue(forKey: id) else { return false }
            return entry.run.heldElsewhere()
        }
    }

    /// The transfer's task, once made.
    func setTask(_ id: Download.ID, _ task: Task<DownloadOutcome, any Error>) {
        entries.withLockedValue { $0[id]?.task = task }
    }

    /// Stops `id`'s transfer with `intent` (what to do once it has stopped) and cancels its task.
    /// Returns `false`, changing nothing, when no transfer of `id` runs: the caller stops it itself.
    func stopTransfer(_ id: Download.ID, _ intent: DownloadRun.StopIntent) -> Bool {
        let (stopping, task) = entries.withLockedValue { entries -> (Bool, Task<DownloadOutcome, any Error>?) in
            guard var entry = entries[id], entry.run.stopTransfer(intent) else { return (false, nil) }
            entries[id] = entry
            return (true, entry.task)
        }
        task?.cancel()
        return stopping
    }

    /// How `id`'s transfer records a stop (see ``DownloadRun/stopRequest``).
    func stopRequest(_ id: Download.ID) -> DownloadStateMachine.Request {
        entries.withLockedValue { $0[id]?.run.stopRequest ?? .interrupt }
    }

    /// The caller has stopped `id` itself, under its lock, and published the event: a run the queue
    /// handed over but that has not begun settles quietly.
    func stoppedByCaller(_ id: Download.ID) {
        entries.withLockedValue { entries in
            entries[id]?.run.stoppedByCaller()
        }
    }

    /// Records an event's snapshot; returns whether to publish it.
    func note(_ event: DownloadEvent) -> Bool {
        entries.withLockedValue { entries in
            let id = event.download.id
            guard var entry = entries[id] else { return true }
            let publish = entry.run.event(event)
            entry.snapshot = event.isTerminal ? nil : event.download
            entries[id] = entry
            return publish
        }
    }

    /// The transfer ended: forgets the run and returns how it is settled.
    func ended(_ id: Download.ID, _ result: Result<DownloadOutcome, SwoopError>) -> DownloadRun.Settlement {
        entries.withLockedValue { entries in
            var run = entries.removeValue(forKey: id)?.run ?? .started()
            return run.ended(result)
        }
    }

    /// Forgets a handed-over run that never began (the manager stopped first).
    func forget(_ id: Download.ID) {
        entries.withLockedValue { _ = $0.removeValue(forKey: id) }
    }

    /// Whether a transfer of `id` runs (or was told to stop and has not ended).
    func isRunning(_ id: Download.ID) -> Bool {
        entries.withLockedValue { $0[id]?.run.isTransferring ?? false }
    }

    /// The latest snapshot `id`'s transfer published, if it runs.
    func snapshot(_ id: Download.ID) -> Download? {
        entries.withLockedValue { $0[id]?.snapshot }
    }

    /// For each of `ids`: the record its run began with (see ``Entry/record``) and its latest
    /// snapshot. One pass under the lock, nothing else copied.
    func latest(_ ids: [Download.ID]) -> [(id: Download.ID, record: DownloadRecord?, snapshot: Download?)] {
        entries.withLockedValue { entries in
            ids.map { id in (id, entries[id]?.record, entries[id]?.snapshot) }
        }
    }

    func snapshots() -> [Download.ID: Download] {
        entries.withLockedValue { $0.compactMapValues(\.snapshot) }
    }

    func cancelAll() {
        for task in entries.withLockedValue({ $0.values.compactMap(\.task) }) { task.cancel() }
    }

    func waitForAll() async {
        for task in entries.withLockedValue({ $0.values.compactMap(\.task) }) { _ = await task.result }
    }
}
