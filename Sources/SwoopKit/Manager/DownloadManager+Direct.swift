import Foundation

extension DownloadManager {
    /// Downloads one file now, in the caller's task and outside the queue (or finishes a partial
    /// one, or recognises it as already complete).
    ///
    /// The download keeps one id throughout: its events carry the id of its record (a new one, or
    /// the stored one when the same URL, directory and name were downloaded before), and
    /// ``pause(_:)``, ``cancel(_:)`` and ``setRateLimit(_:bytesPerSecond:)`` take that id. It counts in
    /// ``stats()``' completed, failed and stopped like a queued download. The request's options and
    /// settings are laid over the stored ones and stored.
    ///
    /// - Returns: How it ended, with the final snapshot.
    /// - Throws: ``SwoopError``; ``SwoopError/Code/cancelled`` when the task was cancelled (progress saved);
    ///   ``SwoopError/Code/inUse`` when another process is downloading it, or this manager is (or has it
    ///   in its queue).
    public func download(_ request: DownloadRequest) async throws -> DownloadOutcome {
        guard phase == .idle || phase == .running else { throw Self.stoppedError }
        do {
            try request.settings.validate()
        } catch let error as SwoopError {
            throw SwoopError(error.code, "\(request.url.absoluteString): \(error.message)")
        }
        let since = Date()
        let lock = try DownloadLock.acquire(request.key, in: configuration.lockDirectory)
        let found = try withStoreErrors {
            // Known by its key, else the unfinished download of another URL to the same file, taken over.
            try store.find(url: request.key.url, directory: request.directory, requestedName: request.key.requestedName)
                ?? adopt(store.unfinished(directory: request.directory, fileName: Self.destinationName(request)), for: request, excluding: [])
        }
        let record = found ?? DownloadRecord(request, bootID: FileSystem.bootID)
        // What is asked now, laid over what is stored; the transfer takes it on.
        var asked = record
        if found != nil { asked.apply(request) }
        var options = try Transfer.Options(asked)
        options.refresh = request.refresh
        if let found, queue.contains(found.id) {
            throw SwoopError(.inUse, "\(request.url.absoluteString) is already in this manager's queue (download \(found.id))")
        }
        guard runs.startDirect(record.id, since: since) else {
            throw SwoopError(.inUse, "\(request.url.absoluteString) is already being downloaded by this manager (download \(record.id))")
        }
        let result = await runTransfer(
            record: record, url: request.url, options: options, isNew: found == nil, announcesAdded: true,
            lock: lock
        )
        settled(record.id)
        return try result.get()
    }
}
