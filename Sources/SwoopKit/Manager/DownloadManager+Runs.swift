import Foundation
import Logging

// How a run goes: the queue hands a download over, the run takes its lock and reads its record
// (once), a transfer runs, and the run is settled as `DownloadRun` decides.

extension DownloadManager {
    static let stoppedError = SwoopError(.invalidArgument, "the download manager is shut down")

    /// Hands the downloads the queue lets start to `run()`.
    func schedule() {
        _ = schedule(keepingOne: false)
    }

    /// Hands the downloads the queue lets start to `run()`, but returns the first instead when
    /// `keepingOne` (a child task of `run()` that runs it next: ``runInTurn(_:)``).
    func schedule(keepingOne: Bool) -> Download.ID? {
        guard phase == .running else { return nil }
        var kept: Download.ID?
        for entry in queue.nextStarts() {
            runs.handOver(entry.id)
            if keepingOne, kept == nil {
                kept = entry.id
            } else {
                startsContinuation.yield(entry.id)
            }
        }
        wakeIdleWaiters()
        return kept
    }

    /// Runs a download the queue handed over, then in the same task each one the queue lets start
    /// as a run ends, until it lets none start: a child task of ``run()`` per slot rather than per
    /// download (thousands of small files skip a task and a hop through Swift's pool each).
    func runInTurn(_ first: Download.ID) async {
        var next: Download.ID? = first
        while let id = next {
            await runQueued(id)
            next = schedule(keepingOne: true)
        }
    }

    func wakeIdleWaiters(force: Bool = false) {
        guard force || isIdle, !idleWaiters.isEmpty else { return }
        let waiters = idleWaiters
        idleWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    /// Wakes the callers waiting for `id`'s run to settle.
    func settled(_ id: Download.ID) {
        for waiter in settleWaiters.removeValue(forKey: id) ?? [] { waiter.resume() }
    }

    /// Returns once `id`'s run has settled.
    func waitForSettlement(_ id: Download.ID) async {
        await withCheckedContinuation { settleWaiters[id, default: []].append($0) }
    }

    /// `id`'s bytes have all arrived and it is being finished: its slot goes to the next download
    /// (it stays active, and its run's task ends with it).
    func bodyArrived(_ id: Download.ID) {
        guard queue.finishing(id) else { return }
        schedule()
    }

    /// Runs one download the queue handed over (``runInTurn(_:)`` then schedules the next).
    func runQueued(_ id: Download.ID) async {
        defer {
            queue.finished(id)
            queuedKeys[id] = nil
            settled(id)
        }
        guard let key = queuedKeys[id] else { return runs.forget(id) }
        // The lock first, then one read: `swoop pause` and `swoop rm` change a record only under
        // the same lock, so what is read here stays true while the transfer runs.
        let lock: DownloadLock
        var record: DownloadRecord?
        let since = Date()
        do {
            lock = try DownloadLock.acquire(key, in: configuration.lockDirectory)
            record = try store.record(id: id)
        } catch let busy as SwoopError where busy.code == .inUse {
            // Another process downloads it (only the lock says `inUse`): its record is that
            // process's, and this one waits for it.
            if runs.heldElsewhere(id) { waitForHolder(id, key: key, busy: busy) }
            return
        } catch {
            heldElsewhere[id] = nil
            if runs.failedToBegin(id) { publishFailure(id: id, record: try? store.record(id: id), error: error) }
            return
        }
        let waited = heldElsewhere.removeValue(forKey: id) != nil
        // A shutdown that began meanwhile must not find a transfer it did not cancel: it stays waiting.
        guard phase == .running else { return runs.forget(id) }
        switch runs.begin(id, found: record?.state, record: record, since: since, afterWaiting: waited) {
        case .settleQuietly:
            return
        case .announceStopped:
            // Paused or removed by another process while it waited.
            session.stopped += 1
            let known = Download(id: id, url: key.url, destination: nil, state: .removed, totalBytes: nil, completedBytes: 0)
            return publishStopped(record, else: known)
        case .takeOver:
            // The process it waited for stopped or failed it: it goes on here, from the bytes kept.
            if var taken = record {
                try? Self.requeue(&taken)
                record = taken
            }
        case .start:
            break
        }
        guard let record else { return }
        guard record.key == key else {
            // Another process moved it to another URL (a re-signed link) while it waited here: it
            // runs there, under the new URL's lock.
            runs.stoppedByCaller(id)
            _ = runs.begin(id, found: nil, since: since)
            return publishFailure(id: id, record: record, error: SwoopError(.inUse, "\(key.url) was moved to \(record.url) by another swoop, which downloads it"))
        }
        var prepared: (url: URL, options: Transfer.Options)
        do {
            // Stored settings are checked as a request's are: a record edited on disk (an idle
            // timeout of 1e308 s trapped turning into a Duration) fails alone, naming the setting.
            try record.settings.validate()
            prepared = (try DownloadRequest.validate(record.url), try Transfer.Options(record))
        } catch {
            return settle(id, record: record, runs.ended(id, .failure(SwoopError.wrapping(error))))
        }
        prepared.options.refresh = refreshes.remove(id) != nil
        _ = await runTransfer(record: record, url: prepared.url, options: prepared.options, isNew: false, announcesAdded: false, lock: lock)
    }

    /// Runs a transfer of a begun run in a task of its own (which a stop cancels), then settles the run.
    func runTransfer(
        record: DownloadRecord, url: URL, options: Transfer.Options, isNew: Bool, announcesAdded: Bool, lock: DownloadLock
    ) async -> Result<DownloadOutcome, SwoopError> {
        let id = record.id
        // Held until the run is settled (a cancel's part file is deleted under it), then let go at once.
        defer { lock.release() }
        let job = transferJob(record: record, url: url, options: options, isNew: isNew, announcesAdded: announcesAdded)
        let task = Self.startTransfer(job)
        runs.setTask(id, task)
        let result = await withTaskCancellationHandler {
            await task.result
        } onCancel: {
            task.cancel()
        }.mapError(SwoopError.wrapping)
        settle(id, record: record, runs.ended(id, result))
        return result
    }

    /// Counts a run that ended and makes sure subscribers hear how: carries out a cancel or remove
    /// that came while it ran, and publishes the terminal event its transfer did not.
    func settle(_ id: Download.ID, record: DownloadRecord, _ settlement: DownloadRun.Settlement) {
        switch settlement {
        case .completed(let alreadyComplete):
            session.completed += 1
            if let alreadyComplete { hub.publish(.alreadyComplete(alreadyComplete)) }
        case .stopped(let announce):
            session.stopped += 1
            guard announce else { return }
            // Stopped before it could say so itself (another process paused or removed it).
            publishStopped(try? store.record(id: id), else: record.snapshot())
        case .failed(let error, let announce):
            session.failed += 1
            if announce { publishFailure(id: id, record: record, error: error, count: false) }
        case .cancel:
            if var current = try? store.record(id: id) { try? markCancelled(&current) }
        case .remove(let deletingFile):
            if let current = try? store.record(id: id) { try? delete(current, deletingFile: deletingFile) }
        }
    }

    /// Announces a download stopped by someone else as its record stands: `paused` while the
    /// record is there and not removed, else `removed` (with `gone`'s snapshot when it is gone).
    func publishStopped(_ current: DownloadRecord?, else gone: Download) {
        if let current, current.state != .removed {
            hub.publish(.paused(current.snapshot()))
        } else {
            var snapshot = current?.snapshot() ?? gone
            snapshot.state = .removed
            hub.publish(.removed(snapshot))
        }
    }

    /// Reports a download that failed before its transfer could record it, and records the failure
    /// through ``DownloadStateMachine`` (a waiting download starts and fails). An `inUse` failure
    /// leaves the record alone: it belongs to the process that holds the lock.
    func publishFailure(id: Download.ID, record: DownloadRecord?, error: any Error, count: Bool = true) {
        let swoopError = error as? SwoopError ?? SwoopError(.store, "cannot read the download state: \(error)", cause: error)
        if count { session.failed += 1 }
        var snapshot = record?.snapshot() ?? Download(id: id, url: "", destination: nil, state: .failed, totalBytes: nil, completedBytes: 0)
        if var record, swoopError.code != .inUse {
            let started = record.state == .waiting ? DownloadStateMachine.next(after: .waiting, on: .start) : .success(record.state)
            if case .success(let failed) = started.flatMap({ DownloadStateMachine.next(after: $0, on: .fail) }) {
                record.state = failed
                record.setLastError(swoopError)
                record.bytesPerSecond = 0
                record.updatedAt = Date()
                // A record that was never stored (a direct download that failed first) stays unstored.
                try? store.update(record, durable: true)
                snapshot = record.snapshot()
            }
        }
        snapshot.error = swoopError.message
        hub.publish(.failed(snapshot, swoopError))
    }

    /// Marks a download removed (`cancel`): its part file is deleted, its record kept as `removed`.
    func markCancelled(_ record: inout DownloadRecord) throws {
        if record.state != .completed, !configuration.cancelKeepsPartFile { Self.deletePartFile(of: record) }
        record.state = try DownloadStateMachine.next(after: record.state, on: .remove).get()
        record.bytesPerSecond = 0
        record.updatedAt = Date()
        try store.save(record)
        session.stopped += 1
        hub.publish(.removed(record.snapshot()))
        wakeIdleWaiters()
    }

    /// Deletes a download's record and, when asked, its part file and unchanged final file.
    func delete(_ record: DownloadRecord, deletingFile: Bool) throws {
        if deletingFile {
            Self.deletePartFile(of: record)
            if record.state == .completed, let path = record.destinationPath {
                if record.isCompletedFile(at: path) {
                    unlink(path)
                } else if FileSystem.exists(path) {
                    hub.publish(.notice(record.snapshot(), "\(path) was changed since it was downloaded; kept it"))
                }
            }
        }
        try store.delete(id: record.id)
        var snapshot = record.snapshot()
        snapshot.state = .removed
        session.stopped += 1
        hub.publish(.removed(snapshot))
        wakeIdleWaiters()
    }

    /// Deletes a download's part file: the one its record names; for a download never named (a
    /// small file whose claim waited, stopped by a crash: `Transfer.claimFile`), the one tagged with
    /// its id under the name asked for or its URL's, or the next few the rename policy would try.
    /// (A name from the server's `Content-Disposition` is not known here: such a leftover is taken
    /// by the next download of that name.)
    static func deletePartFile(of record: DownloadRecord) {
        for (part, tagged) in partFileCandidates(of: record) { PartFile.remove(part, of: record.id.rawValue, tagged: tagged) }
    }

    /// Where a download's part file may be (see ``deletePartFile(of:)``), and whether the file there
    /// must carry the download's tag to be its own (it must when the record names none).
    static func partFileCandidates(of record: DownloadRecord) -> [(path: String, tagged: Bool)] {
        if let part = record.partPath { return [(part, false)] }
        guard record.state != .completed else { return [] }
        let base = record.requestedName.isEmpty
            ? URL(string: record.url).map { FileNaming.suggestedName(contentDisposition: nil, url: $0) } : record.requestedName
        guard let base else { return [] }
        var named = record
        return (0..<8).compactMap { attempt in
            named.fileName = FileNaming.candidate(base, attempt: attempt)
            return named.partPath.map { ($0, true) }
        }
    }

    func existingRecord(_ id: Download.ID) throws -> DownloadRecord {
        guard let record = try store.record(id: id) else {
            throw SwoopError(.notFound, "no download with id \(id)")
        }
        return record
    }

    /// Starts a transfer's task on an event loop of the HTTP client (see `EventLoopExecutor`):
    /// enqueued there at once, not on the actor or Swift's global pool to hop to the loop from there
    /// (nonisolated, so the task does not inherit the actor).
    nonisolated static func startTransfer(
        _ job: @escaping @Sendable () async throws -> DownloadOutcome
    ) -> Task<DownloadOutcome, any Error> {
        Task(executorPreference: EventLoopExecutor.next()) { try await job() }
    }

    /// The work of one transfer, as a closure a task can run.
    /// The transfer works with the manager's configuration as the download's own settings change it.
    nonisolated func transferJob(
        record: DownloadRecord, url: URL, options: Transfer.Options, isNew: Bool, announcesAdded: Bool
    ) -> @Sendable () async throws -> DownloadOutcome {
        let (hub, runs, rateLimits, id) = (hub, runs, rateLimits, record.id)
        var context = Transfer.Context(
            client: client, configuration: options.settings.applied(to: configuration), store: store, logger: logger,
            activeMarks: activeMarks, directorySyncs: directorySyncs, finishes: finishes,
            emit: { event in
                guard runs.note(event) else { return }
                hub.publish(event)
            },
            stopRequest: { runs.stopRequest(id) },
            bodyArrived: { await self.bodyArrived(id) }
        )
        // Made now, with the run begun and no suspension between: from then on a new rate (a
        // `setRateLimit`, here or asked by another process) always finds the limiter.
        context.throttle = rateLimits.start(id, own: options.settings.ownRate)
        return { [context] in
            defer { rateLimits.finish(id) }
            let transfer = Transfer(
                record: record, url: url, options: options, isNew: isNew, announcesAdded: announcesAdded, context: context
            )
            return try await transfer.run()
        }
    }
}

extension SwoopError {
    /// `error` as a ``SwoopError`` (one already is; anything else becomes ``Code/other`` with it as the cause).
    static func wrapping(_ error: any Error) -> SwoopError {
        error as? SwoopError ?? SwoopError(.other, "\(error)", cause: error)
    }
}
