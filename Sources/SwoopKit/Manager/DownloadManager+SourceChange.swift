import Foundation

// A download moving to another URL for the same file (``SourceChange``): a `get` of a re-signed
// link to the file an unfinished download writes, or `changeURL` (`swoop resume ID --url`).

extension DownloadManager {
    /// Moves an unfinished download to another URL for the same file. Its saved bytes are offered
    /// to the new URL under `If-Range` with the stored strong ETag; a `206` of the same length
    /// continues them, anything else starts over in the same part file (see ``SourceChange``). A
    /// download running here is paused for the move and resumed after it.
    ///
    /// - Parameters:
    ///   - url: The new http(s) URL.
    ///   - trustMirrorLength: Keep the bytes on a matching length and Last-Modified when there is
    ///     no strong ETag (risky: two files can share both).
    /// - Throws: ``SwoopError/Code/invalidArgument`` for a bad URL, a completed or removed download,
    ///   or a URL another download of the same file name already has; ``SwoopError/Code/inUse`` when
    ///   another process is transferring it; ``SwoopError/Code/notFound`` for an unknown id.
    public func changeURL(_ id: Download.ID, to url: String, trustMirrorLength: Bool = false) async throws {
        let newURL = try DownloadRequest.validate(url).absoluteString
        try await withSourcesPaused(id) {
            var reason: String?
            var from = ""
            let record = try withDownloadLock(id) { record in
                guard record.state != .completed, record.state != .removed else {
                    throw SwoopError(.invalidArgument, "the download is \(record.state.rawValue): there is nothing to move to \(newURL)")
                }
                if let other = try store.find(url: newURL, directory: record.directory, requestedName: record.requestedName), other.id != id {
                    throw SwoopError(.invalidArgument, "\(newURL) is already download \(other.id.rawValue.prefix(8)) for that file")
                }
                if record.state == .active { record.state = try DownloadStateMachine.next(after: .active, on: .recover).get() }
                from = record.url
                // The same URL: nothing moves (and no saved byte is put in doubt).
                guard newURL != record.url else { return }
                reason = SourceChange.move(&record, to: newURL, requestedName: record.requestedName, trustLength: trustMirrorLength)
                record.updatedAt = Date()
                try store.save(record)
            }
            // A queued run takes the lock by the new key.
            if queuedKeys[id] != nil { queuedKeys[id] = record.key }
            if let reason { announceStartOver(record, from: from, reason: reason) }
        }
    }

    /// Runs `change` with the download paused when it runs here, and resumes it after, whether
    /// the change was made or refused (it then runs as before). Meanwhile its pause is no stop
    /// (``staysPaused(_:)``).
    func withSourcesPaused(_ id: Download.ID, _ change: () throws -> Void) async throws {
        let wasRunning = runs.isRunning(id)
        restarting[id, default: 0] += 1
        defer {
            restarting[id, default: 1] -= 1
            if restarting[id] == 0 { restarting[id] = nil }
        }
        if wasRunning { try await pause(id) }
        do {
            try change()
        } catch {
            if wasRunning { try? resume(id) }
            throw error
        }
        if wasRunning { try resume(id) }
    }

    /// Whether a download that was paused stays so: `false` while it is paused only to change its
    /// sources, or once it runs or waits again (a paused event read late). For a caller that ends
    /// something with a pause (a fleet's claim).
    public func staysPaused(_ id: Download.ID) -> Bool {
        guard restarting[id] == nil, let state = try? existingRecord(id).state else { return false }
        return state == .paused
    }

    /// Replaces a download's mirrors (``DownloadRequest/mirrors``). A download running here is
    /// paused for the change and resumed after it, so its segments spread over the new sources.
    ///
    /// - Throws: ``SwoopError/Code/invalidArgument`` for a bad URL or a completed or removed
    ///   download; ``SwoopError/Code/inUse`` when another process is transferring it;
    ///   ``SwoopError/Code/notFound`` for an unknown id.
    public func setMirrors(_ id: Download.ID, _ mirrors: [String]) async throws {
        let urls = try mirrors.map { try DownloadRequest.validate($0).absoluteString }
        try await withSourcesPaused(id) {
            _ = try withDownloadLock(id) { record in
                guard record.state != .completed, record.state != .removed else {
                    throw SwoopError(.invalidArgument, "the download is \(record.state.rawValue): its sources cannot change")
                }
                guard record.mirrors != urls else { return }
                record.mirrors = urls
                record.updatedAt = Date()
                try store.save(record)
            }
        }
    }

    /// The unfinished download of another URL that `request` would write to the same file, moved
    /// to the request's URL (under that download's lock, so no process starts it meanwhile), or
    /// `nil` when there is none free to take: one this manager queues or runs, one of this batch
    /// (`excluding`), or one another process transfers keeps its URL.
    ///
    /// - Parameter candidate: The unfinished download writing the request's file
    ///   (``destinationName(_:)``), when there is one.
    func adopt(_ candidate: DownloadRecord?, for request: DownloadRequest, excluding: Set<Download.ID>) throws -> DownloadRecord? {
        guard let candidate, candidate.key != request.key, !excluding.contains(candidate.id), !queue.contains(candidate.id),
            !runs.contains(candidate.id), let lock = try DownloadLock.acquireIfFree(candidate.key, in: configuration.lockDirectory)
        else { return nil }
        defer { lock.release() }
        // Read again under the lock: another process may have finished or moved it meanwhile.
        guard var record = try store.record(id: candidate.id), record.key == candidate.key,
            record.state != .completed, record.state != .removed
        else { return nil }
        if record.state == .active { record.state = try DownloadStateMachine.next(after: .active, on: .recover).get() }
        let reason = SourceChange.move(&record, to: request.key.url, requestedName: request.key.requestedName, trustLength: request.trustMirrorLength)
        record.updatedAt = Date()
        try store.save(record)
        if let reason { announceStartOver(record, from: candidate.url, reason: reason) }
        return record
    }

    /// The file name a request's download writes, as far as it is known before any answer: the
    /// name asked for, else the URL's.
    static func destinationName(_ request: DownloadRequest) -> String {
        request.fileName ?? FileNaming.suggestedName(contentDisposition: nil, url: request.url)
    }

    /// Says that a download moved and starts over. (When its bytes are offered to the new URL
    /// instead, the record names where they came from, ``DownloadRecord/movedFrom``, and its next
    /// run says whether the URL proved them.)
    func announceStartOver(_ record: DownloadRecord, from: String, reason: String) {
        let part = record.partPath.map { ($0 as NSString).lastPathComponent } ?? "its part file"
        hub.publish(.notice(record.snapshot(), "\(record.url) takes over the download of \(from); starting over in \(part): \(reason)"))
    }
}
