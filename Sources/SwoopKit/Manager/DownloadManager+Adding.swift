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

    /// Queues many downloads in one store transaction (thousands take a fraction of a second).
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
        var position = try nextQueuePosition()
        var byKey: [DownloadKey: DownloadRecord] = [:]
        var ids: [Download.ID] = []
        var toSave: [DownloadRecord] = []
        var queued: [DownloadRecord] = []
        let keys = requests.map(\.key)
        // One batch lookup: thousands of URLs cost one read, not one each.
        let stored = Dictionary(try store.find(keys).map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
        // A download this batch names itself is never taken over by another line of it.
        var named = Set(stored.values.map(\.id))
        // The unfinished downloads the new requests' files would take over, in one lookup per directory.
        // (Names by their bytes, as the file system tells files apart.)
        var candidates: [[UInt8]: [[UInt8]: DownloadRecord]] = [:]
        let fresh = Dictionary(grouping: zip(requests, keys).filter { stored[$0.1] == nil }.map(\.0), by: { Array($0.directory.utf8) })
        for (directory, group) in fresh {
            let found = try store.unfinished(directory: group[0].directory, fileNames: group.map(Self.destinationName))
            candidates[directory] = Dictionary(
                found.compactMap { record in record.fileName.map { (Array($0.utf8), record) } }, uniquingKeysWith: { a, _ in a }
            )
        }
        for (request, key) in zip(requests, keys) {
            if let record = byKey[key] {
                ids.append(record.id)
                continue
            }
            var record: DownloadRecord
            var isNew = false
            if let existing = stored[key] {
                if queue.contains(existing.id) || runs.contains(existing.id) {
                    // Already queued or running here (a direct download too): its live record must
                    // not be overwritten.
                    byKey[key] = existing
                    ids.append(existing.id)
                    continue
                }
                if existing.state == .active {
                    // Another process may be running it: its row is that process's to write. The
                    // lock decides when it starts here (a dead process's download is recovered then).
                    byKey[key] = existing
                    ids.append(existing.id)
                    queued.append(existing)
                    continue
                }
                record = existing
                try Self.requeue(&record)
            } else if let adopted = try adopt(
                candidates[Array(request.directory.utf8)]?[Array(Self.destinationName(request).utf8)], for: request, excluding: named
            ) {
                // The unfinished download of another URL to the same file: this URL takes it over.
                record = adopted
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
            byKey[key] = record
            ids.append(record.id)
            named.insert(record.id)
            toSave.append(record)
            if !pausing { queued.append(record) }
        }
        nextPosition = position
        try store.save(contentsOf: toSave)
        for record in toSave { hub.publish(.added(record.snapshot())) }
        enqueue(queued)
        return ids
    }

    /// Puts records in the waiting queue (their keys kept for the lock a run takes) and starts
    /// what may start.
    func enqueue(_ records: [DownloadRecord]) {
        for record in records { queuedKeys[record.id] = record.key }
        queue.enqueue(records.map(Self.entry))
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
