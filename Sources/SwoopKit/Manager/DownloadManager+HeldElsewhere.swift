import Foundation

// A queued download whose lock another swoop process holds waits for that process instead of
// failing: two `swoop get` of one list on one state directory share its downloads, and both end
// with every file (the other's completed ones reported already complete, the ones it stopped or
// failed taken over).

/// A queued download whose lock another process held when its turn came.
struct HeldDownload: Sendable, Hashable {
    /// The key its lock is taken by (as queued).
    var key: DownloadKey
    /// How many turns found the lock taken.
    var attempts = 0

    /// How long it waits out of the queue before its next turn: 0.2 s after the first refusal (the
    /// other process may be finishing it), doubling to at most 2 s.
    var retryDelay: Duration {
        .milliseconds(min(2_000, 100 << min(max(attempts, 1), 5)))
    }
}

extension DownloadManager {
    /// `id`'s turn came and another process holds its lock (`busy` names it): it leaves the queue
    /// and comes back after ``HeldDownload/retryDelay``. It says that it waits once, at its second
    /// refusal: two `get` of one list of small files each find half of them taken for an instant,
    /// which 300 such lines a run only hid.
    func waitForHolder(_ id: Download.ID, key: DownloadKey, busy: SwoopError) {
        var held = heldElsewhere[id] ?? HeldDownload(key: key)
        held.attempts += 1
        heldElsewhere[id] = held
        if held.attempts == 2 {
            let waiting = Download(id: id, url: key.url, destination: nil, state: .waiting, totalBytes: nil, completedBytes: 0)
            hub.publish(.notice(waiting, "\(busy.message): waiting for it"))
        }
        let delay = held.retryDelay
        Task { [weak self] in
            try? await Task.sleep(for: delay)
            await self?.requeueHeld(id)
        }
    }

    /// Puts a download that waits for another process back in the queue, in its place (its
    /// priority and position as stored), unless the manager stopped running meanwhile.
    func requeueHeld(_ id: Download.ID) {
        guard phase == .running, let held = heldElsewhere[id] else { return }
        let record: DownloadRecord?
        do {
            record = try store.record(id: id)
        } catch {
            heldElsewhere[id] = nil
            publishFailure(id: id, record: nil, error: error)
            return wakeIdleWaiters()
        }
        guard let record else {
            // Removed by the other process: it is no one's to finish.
            heldElsewhere[id] = nil
            session.stopped += 1
            let gone = Download(id: id, url: held.key.url, destination: nil, state: .removed, totalBytes: nil, completedBytes: 0)
            publishStopped(nil, else: gone)
            return wakeIdleWaiters()
        }
        enqueue([(Self.entry(record), held.key)])
    }

    /// Whether nothing is queued, running or waiting for another process.
    var isIdle: Bool {
        queue.isIdle && heldElsewhere.isEmpty
    }
}
