import Foundation

extension DownloadManager {
    /// Downloads one file now, in the caller's task and outside the queue (or finishes a partial
    /// one, or recognises it as already complete).
    ///
    /// The download keeps one id throughout: its events carry the id of its record (a new one, or
    /// the stored one when the same URL, directory and name were downloaded before), and
    /// ``pause(_:)``, ``cancel(_:)`` and ``setRateLimit(_:bytesPerSecond:)`` take that id.
    ///
    /// - Returns: How it ended, with the final snapshot.
    /// - Throws: ``SwoopError``; ``SwoopError/Code/cancelled`` when the task was cancelled (progress saved);
    ///   ``SwoopError/Code/inUse`` when another process is downloading it.
    public func download(_ request: DownloadRequest) async throws -> DownloadOutcome {
        guard phase == .idle || phase == .running else { throw Self.stoppedError }
        try RateLimits.validate(request.bytesPerSecond, "the rate limit of \(request.url.absoluteString)")
        let lock = try DownloadLock.acquire(request.key, in: configuration.lockDirectory)
        let found = try withStoreErrors { try store.find(url: request.key.url, directory: request.directory, requestedName: request.key.requestedName) }
        let record = found ?? DownloadRecord(request, bootID: FileSystem.bootID)
        if let found, runs.isRunning(found.id) {
            throw SwoopError(.inUse, "\(request.url.absoluteString) is already being downloaded by this manager (download \(found.id))")
        }
        runs.startDirect(record.id)
        let result = await runTransfer(
            record: record, url: request.url, options: Transfer.Options(request), isNew: found == nil, announcesAdded: true,
            lock: lock, requestedRate: request.bytesPerSecond
        )
        settled(record.id)
        return try result.get()
    }
}
