import Foundation

extension DownloadManager {
    /// Snapshots of the downloads in the store, in queue order, with live speeds for running ones.
    ///
    /// - Parameter states: Only these states, or `nil` for all.
    public func downloads(matching states: Set<Download.State>? = nil) throws -> [Download] {
        let current = runs.snapshots()
        return try store.all().compactMap { record in
            let snapshot = current[record.id] ?? record.snapshot(bytesPerSecond: record.state == .active ? record.bytesPerSecond : 0)
            return states.map { $0.contains(snapshot.state) } ?? true ? snapshot : nil
        }
    }

    /// One download's snapshot.
    public func download(id: Download.ID) throws -> Download {
        if let snapshot = runs.snapshots()[id] { return snapshot }
        return try existingRecord(id).snapshot()
    }

    /// Counts and total speed of this manager's downloads.
    public func stats() -> DownloadStats {
        let snapshots = runs.snapshots()
        let running = queue.active.keys
        return DownloadStats(
            active: running.count, waiting: queue.waiting.count, completed: session.completed, failed: session.failed,
            stopped: session.stopped,
            bytesPerSecond: running.reduce(0) { $0 + (snapshots[$1]?.bytesPerSecond ?? 0) },
            maxConcurrentDownloads: queue.limits.maxConcurrent
        )
    }
}
