import Foundation

extension DownloadManager {
    /// The part file a download has on disk now, if any: the one its record names, or for a
    /// download never named (a small file stopped by a crash before its claim) the one tagged
    /// with its id. For `rm` to say where the bytes of a forgotten download stay.
    public func partFile(of id: Download.ID) throws -> String? {
        guard let record = try store.record(id: id) else { return nil }
        return Self.partFileCandidates(of: record).first { candidate in
            guard FileSystem.exists(candidate.path) else { return false }
            let tag = PartFile.taggedDownload(path: candidate.path)
            return tag.map { $0 == record.id.rawValue } ?? !candidate.tagged
        }?.path
    }

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
        if let snapshot = runs.snapshot(id) { return snapshot }
        return try existingRecord(id).snapshot()
    }

    /// Counts and total speed of this manager's downloads.
    public func stats() -> DownloadStats {
        let snapshots = runs.snapshots()
        let running = queue.active.keys
        return DownloadStats(
            active: running.count, waiting: queue.waitingCount, completed: session.completed, failed: session.failed,
            stopped: session.stopped,
            bytesPerSecond: running.reduce(0) { $0 + (snapshots[$1]?.bytesPerSecond ?? 0) },
            maxConcurrentDownloads: queue.limits.maxConcurrent
        )
    }
}

/// A download's snapshot (live for a running one) with its stored record: what a daemon shows
/// about it (its directory, mirrors, headers and settings besides its progress).
public struct DownloadDetails: Sendable {
    public var download: Download
    public var record: DownloadRecord

    public init(download: Download, record: DownloadRecord) {
        self.download = download
        self.record = record
    }
}

extension DownloadManager {
    /// One download's details.
    ///
    /// - Throws: ``SwoopError/Code/notFound`` for an unknown id.
    public func details(id: Download.ID) throws -> DownloadDetails {
        let record = try existingRecord(id)
        return DownloadDetails(download: runs.snapshot(id) ?? record.snapshot(), record: record)
    }

    /// The details of the downloads with these ids that exist, in the order given.
    public func details(ids: [Download.ID]) throws -> [DownloadDetails] {
        let current = runs.snapshots()
        return try store.records(ids: ids).map { record in
            DownloadDetails(download: current[record.id] ?? record.snapshot(), record: record)
        }
    }

    /// The details of the downloads stored in one of `states` and still in one (a running
    /// download's live state may be ahead of its row), in queue order.
    public func details(matching states: Set<Download.State>) throws -> [DownloadDetails] {
        let current = runs.snapshots()
        return try store.records(in: states).compactMap { record in
            let download = current[record.id] ?? record.snapshot()
            return states.contains(download.state) ? DownloadDetails(download: download, record: record) : nil
        }
    }

    /// How many downloads of the store are in each state.
    public func counts() throws -> [Download.State: Int] {
        try store.counts()
    }

    /// The details of the downloads running in this manager now (in one call: a daemon asks often).
    /// One handed to its run but not begun yet counts as active already: it left the waiting list.
    public func runningDetails() throws -> [DownloadDetails] {
        // A run's record as it began serves, but not for a download that may use several
        // connections: its segments (its bitfield) move on in the store.
        let single = { (record: DownloadRecord) in
            record.segments == nil && record.mirrors.isEmpty
                && (record.settings.maxConnections ?? self.configuration.segments.maxConnections) == 1
        }
        var all: [DownloadDetails] = []
        var unread: [Download.ID] = []
        var live: [Download.ID: Download] = [:]
        // Active as aria2 sees it: a waiting one handed to its run counts as active already.
        func add(_ download: Download, _ record: DownloadRecord) {
            guard download.state == .active || download.state == .waiting else { return }
            var details = DownloadDetails(download: download, record: record)
            details.download.state = .active
            all.append(details)
        }
        for (id, record, snapshot) in runs.latest(Array(queue.active.keys)) {
            if let record, single(record) {
                add(snapshot ?? record.snapshot(), record)
            } else {
                unread.append(id)
                live[id] = snapshot
            }
        }
        for record in try store.records(ids: unread) {
            add(live[record.id] ?? record.snapshot(), record)
        }
        return all
    }

    /// Every download's id (to find one by a prefix).
    public func ids() throws -> [Download.ID] {
        try store.ids()
    }
}
