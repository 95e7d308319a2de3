import Foundation

extension DownloadManager {
    // MARK: - Adding

    /// Queues a download and returns its id.
    ///
    /// A URL already in the store for the same directory and file name is reused, never
    /// duplicated: a paused, interrupted or failed one goes back to the queue and continues from its progress; a
    /// completed one is recognised (``DownloadEvent/alreadyComplete(_:)``) without a transfer.
    public func add(_ request: DownloadRequest) throws -> Download.ID {
        try add(contentsOf: [request])[0]
    }

    /// Queues many downloads: one store read and one transaction for each ``addBatch`` of them
    /// (thousands take a fraction of a second).
    ///
    /// A batch saved stays queued if a later one fails: adding the list again reuses what was saved.
    ///
    /// - Returns: The ids, one per request, in order (a request repeated in the list gets the same id).
    public func add(contentsOf requests: [DownloadRequest]) throws -> [Download.ID] {
        guard phase == .idle || phase == .running else { throw Self.stoppedError }
        for request in requests {
            do {
                try request.settings.validate()
            } catch let error as SwoopError {
                throw SwoopError(error.code, "\(request.url.absoluteString): \(error.message)")
            }
        }
        var added = AddedSoFar()
        var ids: [Download.ID] = []
        ids.reserveCapacity(requests.count)
        var start = requests.startIndex
        while start < requests.endIndex {
            let end = min(start + Self.addBatch, requests.endIndex)
            ids += try addRetrying(requests[start..<end], &added)
            start = end
        }
        return ids
    }

    /// The most requests one store read and one save of ``add(contentsOf:)`` take. What a batch
    /// holds (the store's answers, the records to save, the files they may take over) is gone
    /// before the next: adding 10,000 URLs at once held 20 MiB, more than the downloads then did.
    static let addBatch = 1_000

    /// What the batches of one ``add(contentsOf:)`` have added: a URL repeated in a later batch
    /// gets the id an earlier one gave it, and a download a line names is never taken over by a
    /// later line. (A line may take over the unfinished download of a URL named only in a later
    /// batch; that later line then makes a new download, as a second `swoop get` of its URL would.)
    struct AddedSoFar {
        var byKey: [DownloadKey: Download.ID] = [:]
        var named: Set<Download.ID> = []
    }

    /// ``addOnce(_:_:)``, read again when another process adds some of the same downloads between
    /// the batch's read and its save, which fails the save whole (`SwoopError.keyTaken`): the
    /// second read finds its records, and reuses them.
    private func addRetrying(_ requests: ArraySlice<DownloadRequest>, _ added: inout AddedSoFar) throws -> [Download.ID] {
        for _ in 0..<3 {
            var attempt = added
            do {
                let ids = try addOnce(requests, &attempt)
                added = attempt
                return ids
            } catch let error as SwoopError where error.code == .store && error.isRetryable {
                continue
            }
        }
        return try addOnce(requests, &added)
    }

    /// One read of what the store knows of `requests`, then one save (see ``add(contentsOf:)``).
    private func addOnce(_ requests: ArraySlice<DownloadRequest>, _ added: inout AddedSoFar) throws -> [Download.ID] {
        var position = try nextQueuePosition()
        // Ids and queue entries, not whole records: a list of thousands of URLs keeps one copy of each.
        var ids: [Download.ID] = []
        var toSave: [DownloadRecord] = []
        var expecting: [Download.ID: DownloadRecord.Version] = [:]
        // Added again as they were, so not written (see below), but announced as the saved ones are.
        var announced: [DownloadRecord] = []
        var queued: [(entry: DownloadQueue.Entry, key: DownloadKey)] = []
        ids.reserveCapacity(requests.count)
        toSave.reserveCapacity(requests.count)
        queued.reserveCapacity(requests.count)
        let keys = requests.map(\.key)
        // One batch lookup: thousands of URLs cost one read, not one each.
        let stored = Dictionary(try store.find(keys).map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
        // A download this batch names itself is never taken over by another line of it.
        added.named.formUnion(stored.values.map(\.id))
        // The unfinished downloads the new requests' files would take over, in one lookup per directory.
        // (Names by their bytes, as the file system tells files apart.) Positions in `requests`, not
        // copies of them.
        var candidates: [[UInt8]: [[UInt8]: DownloadRecord]] = [:]
        let fresh = Dictionary(
            grouping: zip(requests.indices, keys).filter { stored[$0.1] == nil }.map(\.0), by: { Array(requests[$0].directory.utf8) }
        )
        for (directory, group) in fresh {
            let found = try store.unfinished(directory: requests[group[0]].directory, fileNames: group.map { Self.destinationName(requests[$0]) })
            candidates[directory] = Dictionary(
                found.compactMap { record in record.fileName.map { (Array($0.utf8), record) } }, uniquingKeysWith: { a, _ in a }
            )
        }
        for (request, key) in zip(requests, keys) {
            if let id = added.byKey[key] {
                ids.append(id)
                continue
            }
            var record: DownloadRecord
            var isNew = false
            var unchanged: DownloadRecord?
            if let existing = stored[key] {
                if queue.contains(existing.id) || runs.contains(existing.id) {
                    // Already queued or running here (a direct download too): its live record must
                    // not be overwritten.
                    added.byKey[key] = existing.id
                    ids.append(existing.id)
                    continue
                }
                if existing.state == .active {
                    // Another process may be running it: its row is that process's to write. The
                    // lock decides when it starts here (a dead process's download is recovered then).
                    added.byKey[key] = existing.id
                    ids.append(existing.id)
                    queued.append((Self.entry(existing), key))
                    continue
                }
                record = existing
                unchanged = existing
                expecting[record.id] = existing.version
                try Self.requeue(&record)
            } else if let adopted = try adopt(
                candidates[Array(request.directory.utf8)]?[Array(Self.destinationName(request).utf8)], for: request, excluding: added.named
            ) {
                // The unfinished download of another URL to the same file: this URL takes it over.
                record = adopted
                expecting[record.id] = adopted.version
                try Self.requeue(&record)
            } else {
                record = DownloadRecord(request, bootID: FileSystem.bootID, position: position)
                position += 1
                isNew = true
            }
            record.apply(request)
            if request.refresh, record.state == .completed { refreshes.insert(record.id) }
            // A re-added download keeps the priority it was given unless this request names one.
            if isNew || request.priority != 0 { record.priority = request.priority }
            record.updatedAt = Date()
            let pausing = request.paused && record.state == .waiting
            if pausing { record.state = try DownloadStateMachine.next(after: .waiting, on: .pause).get() }
            added.byKey[key] = record.id
            ids.append(record.id)
            added.named.insert(record.id)
            if let unchanged, record.sameApartFromUpdate(unchanged) {
                // Nothing to write (a waiting or completed download added again as it was): another
                // process running it meanwhile must not fail this batch over a write it does not need.
                expecting[record.id] = nil
                announced.append(record)
            } else {
                toSave.append(record)
            }
            if !pausing { queued.append((Self.entry(record), record.key)) }
        }
        nextPosition = position
        // A download read here and changed by another process before this save (it ran it meanwhile)
        // fails the batch, which is read again: never its stale copy written over the other's.
        try store.save(contentsOf: toSave, expecting: expecting)
        for record in announced + toSave { hub.publish(.added(record.snapshot())) }
        enqueue(queued)
        return ids
    }

    /// Puts records in the waiting queue (their keys kept for the lock a run takes) and starts
    /// what may start.
    func enqueue(_ records: [DownloadRecord]) {
        enqueue(records.map { (Self.entry($0), $0.key) })
    }

    /// Puts queue entries in the waiting queue, with the keys of their records, and starts what may start.
    func enqueue(_ entries: [(entry: DownloadQueue.Entry, key: DownloadKey)]) {
        for (entry, key) in entries { queuedKeys[entry.id] = key }
        queue.enqueue(entries.map(\.entry))
        schedule()
    }

    /// Puts a stored record back in line: paused, interrupted and failed ones resume, a removed one
    /// starts afresh.
    static func requeue(_ record: inout DownloadRecord) throws {
        switch record.state {
        case .paused, .interrupted, .failed:
            record.state = try DownloadStateMachine.next(after: record.state, on: .resume).get()
        case .removed:
            record = record.restarted(bootID: FileSystem.bootID)
        case .waiting, .active, .completed:
            // An `active` record belongs to a live process (its lock decides at start) or to a dead
            // one (recovered at start); a completed one is checked at start.
            break
        }
    }

    func nextQueuePosition() throws -> Int {
        if let nextPosition { return nextPosition }
        let position = (try store.all().map(\.position).max() ?? -1) + 1
        nextPosition = position
        return position
    }

    static func entry(_ record: DownloadRecord) -> DownloadQueue.Entry {
        DownloadQueue.Entry(id: record.id, host: Syntax.host(of: record.url), priority: record.priority, position: record.position)
    }
}
