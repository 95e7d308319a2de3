import Foundation

extension DownloadManager {
    /// Pauses a download: a running one stops (progress saved), a waiting one leaves the queue. A
    /// paused download stays paused until it is resumed by name (a bare `swoop resume` leaves it).
    ///
    /// A download another process is transferring is paused by that process, asked through the
    /// store; this returns once it has.
    ///
    /// - Throws: ``SwoopError/Code/notFound`` for an unknown id; ``SwoopError/Code/inUse`` when
    ///   another process runs it and does not answer; ``SwoopError/Code/invalidArgument`` when its
    ///   state does not allow it.
    public func pause(_ id: Download.ID) async throws {
        if runs.stopTransfer(id, .pause) { return await waitForSettlement(id) }
        guard let record = try await withLockOrOwner(id, asking: .pause, { record in
            // Under the lock, `active` can only be what a dead process left.
            record.state = try DownloadStateMachine.next(after: record.state == .active ? .waiting : record.state, on: .pause).get()
            record.bytesPerSecond = 0
            record.updatedAt = Date()
            try store.save(record)
        }) else { return }
        runs.stoppedByCaller(id)
        queue.removeWaiting(id)
        session.stopped += 1
        hub.publish(.paused(record.snapshot()))
        wakeIdleWaiters()
        await waitForHandedOverStart(id)
    }

    /// Puts a paused, interrupted or failed download (or one a dead process left behind) back in
    /// the queue.
    ///
    /// - Parameters:
    ///   - headers: Request headers to store with it (replacing stored ones of the same name).
    ///   - settings: Settings laid over its stored ones and stored (see ``DownloadSettings/overriding(with:)``).
    public func resume(
        _ id: Download.ID, replacingHeaders headers: [(name: String, value: String)] = [], settings: DownloadSettings = DownloadSettings()
    ) throws {
        try settings.validate()
        guard !queue.contains(id), !runs.contains(id) else {
            throw SwoopError(.invalidArgument, "download \(id) is already \(queue.isWaiting(id) ? "waiting" : "active")")
        }
        var record = try existingRecord(id)
        switch record.state {
        case .waiting:
            break
        case .active:
            // Left by a process that died, unless one holds its lock (then this throws, naming its pid).
            _ = try DownloadLock.acquire(record.key, in: configuration.lockDirectory)
            record.state = try DownloadStateMachine.next(after: .active, on: .recover).get()
        default:
            record.state = try DownloadStateMachine.next(after: record.state, on: .resume).get()
        }
        record.headers = DownloadRecord.merged(record.headers, headers)
        record.settings = record.settings.overriding(with: settings)
        record.updatedAt = Date()
        try store.save(record)
        enqueue([record])
    }

    /// Pauses every running and waiting download of this manager.
    public func pauseAll() async {
        // Waiting ones first: each running one that stops frees a slot the queue would fill.
        let ids = queue.waiting.map(\.id) + Array(queue.active.keys)
        for id in ids { try? await pause(id) }
    }

    /// Resumes every unfinished download in the store (paused, interrupted, failed, waiting, or left
    /// active by a process that died), in queue order.
    ///
    /// - Parameters:
    ///   - headers: Request headers to store with each (replacing stored ones of the same name),
    ///     such as a fresh `Authorization`.
    ///   - settings: Settings laid over each one's stored settings and stored.
    ///   - states: Which unfinished states to resume (all of them by default; a bare `swoop resume`
    ///     takes waiting and interrupted ones, leaving paused and failed ones until asked).
    /// - Returns: The ids queued.
    @discardableResult
    public func resumeAll(
        replacingHeaders headers: [(name: String, value: String)] = [], settings: DownloadSettings = DownloadSettings(),
        states: Set<Download.State> = [.waiting, .paused, .interrupted, .failed, .active]
    ) throws -> [Download.ID] {
        try settings.validate()
        var resumed: [DownloadRecord] = []
        for var record in try store.all()
        where !queue.contains(record.id) && !runs.contains(record.id) && states.contains(record.state) {
            switch record.state {
            case .waiting, .paused, .interrupted, .failed:
                if record.state != .waiting { record.state = try DownloadStateMachine.next(after: record.state, on: .resume).get() }
            case .active:
                // Left by a process that died, unless one is running it (then it is not ours to resume).
                guard (try? DownloadLock.acquireIfFree(record.key, in: configuration.lockDirectory)) != nil else { continue }
                record.state = try DownloadStateMachine.next(after: .active, on: .recover).get()
            case .completed, .removed:
                continue
            }
            record.headers = DownloadRecord.merged(record.headers, headers)
            record.settings = record.settings.overriding(with: settings)
            record.updatedAt = Date()
            resumed.append(record)
        }
        // One transaction for all: resuming thousands costs one fsync, not one each.
        try store.save(contentsOf: resumed)
        enqueue(resumed)
        return resumed.map(\.id)
    }

    /// Stops a download for good: the part file is deleted and the record is kept as `removed`
    /// (a completed file stays where it is). Another process transferring it is asked to, as
    /// ``pause(_:)`` does.
    public func cancel(_ id: Download.ID) async throws {
        if runs.stopTransfer(id, .cancel) { return await waitForSettlement(id) }
        guard try await withLockOrOwner(id, asking: .cancel, { record in try markCancelled(&record) }) != nil else { return }
        runs.stoppedByCaller(id)
        queue.removeWaiting(id)
        await waitForHandedOverStart(id)
    }

    /// When the queue already handed `id` to `run()` (its transfer not begun), waits until that
    /// run has found it stopped and freed its slot, so a `resume` right after works.
    func waitForHandedOverStart(_ id: Download.ID) async {
        guard queue.active[id] != nil else { return }
        await waitForSettlement(id)
    }

    /// Forgets a download: stops it if running and deletes its record; with `deletingFile`, also its
    /// part file and its final file (a final file changed since Swoop wrote it is kept). Another
    /// process transferring it is asked to, as ``pause(_:)`` does.
    public func remove(_ id: Download.ID, deletingFile: Bool = false) async throws {
        if runs.stopTransfer(id, .remove(deletingFile: deletingFile)) { return await waitForSettlement(id) }
        let asking = DownloadControl.remove(deletingFile: deletingFile)
        guard try await withLockOrOwner(id, asking: asking, { record in try delete(record, deletingFile: deletingFile) }) != nil else {
            return
        }
        runs.stoppedByCaller(id)
        queue.removeWaiting(id)
        await waitForHandedOverStart(id)
    }

    /// Runs `body` on the download's freshly read record while holding its cross-process lock, so
    /// that no process starts it meanwhile (a transfer takes the lock, then reads the record).
    ///
    /// - Throws: ``SwoopError/Code/inUse`` naming the pid when another process is transferring it;
    ///   ``SwoopError/Code/notFound`` for an unknown id.
    func withDownloadLock(_ id: Download.ID, _ body: (inout DownloadRecord) throws -> Void) throws -> DownloadRecord {
        // The lock is keyed by the URL: a download moved to another URL meanwhile is locked again
        // under its new key.
        var key = try existingRecord(id).key
        for _ in 0..<3 {
            let lock = try DownloadLock.acquire(key, in: configuration.lockDirectory)
            defer { withExtendedLifetime(lock) {} }
            var record = try existingRecord(id)
            guard record.key == key else {
                key = record.key
                continue
            }
            try body(&record)
            return record
        }
        throw SwoopError(.inUse, "download \(id) keeps moving to other URLs (another swoop is changing it)")
    }

    /// Moves a waiting download to `position` in the waiting order (0 is next).
    public func move(_ id: Download.ID, to position: Int) throws {
        guard let changed = queue.move(id, to: position, firstPosition: queue.waiting.map(\.position).min() ?? 0) else {
            throw SwoopError(.invalidArgument, "download \(id) is not waiting in this manager's queue")
        }
        try saveQueueEntries(changed)
    }

    /// The downloads that have not started, in the order they will: the waiting ones and, in their
    /// places, the paused and interrupted ones (which keep their place while they wait to be
    /// resumed, as aria2's paused downloads keep theirs in its waiting queue).
    public func queueOrder() throws -> [Download.ID] {
        try unstartedEntries().map(\.id)
    }

    /// Moves a waiting, paused or interrupted download to `index` in ``queueOrder()`` (clamped).
    ///
    /// - Returns: The index it is at now.
    /// - Throws: ``SwoopError/Code/invalidArgument`` when it is not one of them.
    @discardableResult
    public func reorder(_ id: Download.ID, to index: Int) throws -> Int {
        let entries = try unstartedEntries()
        let first = entries.map(\.position).min() ?? 0
        guard let (order, changed) = DownloadQueue.reordered(entries, moving: id, to: index, firstPosition: first) else {
            throw SwoopError(.invalidArgument, "download \(id) is not waiting or paused: only those have a place in the queue")
        }
        try saveQueueEntries(changed)
        queue.update(changed)
        return order.firstIndex { $0.id == id } ?? 0
    }

    /// The queue's waiting entries and the paused and interrupted downloads of the store, in start order.
    func unstartedEntries() throws -> [DownloadQueue.Entry] {
        let stopped = try store.records(in: [.paused, .interrupted]).filter { !queue.contains($0.id) && !runs.contains($0.id) }
        guard !stopped.isEmpty else { return queue.waiting }
        return (queue.waiting + stopped.map(Self.entry)).sorted(by: DownloadQueue.Entry.precedes)
    }

    /// Changes a waiting download's priority (higher starts first).
    public func setPriority(_ id: Download.ID, _ priority: Int) throws {
        guard let changed = queue.setPriority(id, priority) else {
            throw SwoopError(.invalidArgument, "download \(id) is not waiting in this manager's queue")
        }
        try saveQueueEntries([changed])
    }

    /// Changes how many downloads run at once. Lowering it lets running downloads finish; it does
    /// not stop them.
    public func setMaxConcurrentDownloads(_ limit: Int) throws {
        guard limit >= 1 else { throw SwoopError(.invalidArgument, "the most downloads at once must be at least 1") }
        queue.limits.maxConcurrent = limit
        schedule()
    }

    /// Changes the per-host limit (`nil` for none).
    public func setMaxPerHost(_ limit: Int?) throws {
        if let limit, limit < 1 { throw SwoopError(.invalidArgument, "the most downloads per host must be at least 1") }
        queue.limits.maxPerHost = limit
        schedule()
    }

    /// Stores the queue places of `entries` (read in one lookup: a reorder renumbers the whole queue).
    func saveQueueEntries(_ entries: [DownloadQueue.Entry]) throws {
        let places = Dictionary(entries.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        let records = try store.records(ids: entries.map(\.id)).map { stored in
            var record = stored
            if let place = places[record.id] { (record.priority, record.position) = (place.priority, place.position) }
            return record
        }
        try store.save(contentsOf: records)
    }
}
