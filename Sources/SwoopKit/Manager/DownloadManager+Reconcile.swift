import Foundation

extension DownloadManager {
    /// Brings the store in line with the disk, as at launch: downloads a dead process left `active`
    /// go back to waiting; completed downloads whose file is gone or changed are marked so (in their
    /// ``Download/error``); part files without a record are reported (never deleted); finished
    /// records beyond ``Configuration/History`` are forgotten.
    public func reconcile() throws -> ReconciliationReport {
        var report = ReconciliationReport()
        var changed: [DownloadRecord] = []
        let records = try store.all()
        for var record in records {
            switch record.state {
            case .active where !queue.contains(record.id) && !runs.isRunning(record.id):
                guard (try? DownloadLock.acquireIfFree(record.key, in: configuration.lockDirectory)) != nil else { continue }
                record.state = try DownloadStateMachine.next(after: .active, on: .recover).get()
                record.bytesPerSecond = 0
                report.recovered.append(record.id)
                changed.append(record)
            case .completed:
                guard let path = record.destinationPath else { continue }
                if record.isCompletedFile(at: path), record.lastError == nil, !(record.partPath.map(FileSystem.exists) ?? false) {
                    continue
                }
                // Not as recorded: look again under the download's lock. A process still finishing
                // it (between its record and its rename) holds that lock: it is left alone.
                guard !queue.contains(record.id), !runs.isRunning(record.id),
                    let lock = try DownloadLock.acquireIfFree(record.key, in: configuration.lockDirectory),
                    let outcome = try withExtendedLifetime(lock, { try checkCompleted(record.id) })
                else { continue }
                if outcome.published { report.published.append(record.id) }
                if outcome.problem { report.changedFiles.append(record.id) }
            default:
                continue
            }
        }
        try store.save(contentsOf: changed)
        report.forgotten = try applyRetention(records)
        report.orphanedPartFiles = Self.orphanedPartFiles(records)
        return report
    }

    /// Checks a completed download whose file is not as recorded, under its lock and from a fresh
    /// read: renames its part file if its process stopped before the rename, then records whether
    /// the file is gone or changed (in its error).
    func checkCompleted(_ id: Download.ID) throws -> (published: Bool, problem: Bool)? {
        guard var record = try store.record(id: id), record.state == .completed, let path = record.destinationPath else {
            return nil
        }
        let published = (try? Transfer.finishInterruptedPublish(of: record, directorySyncs: directorySyncs)) == true
        let problem = record.isCompletedFile(at: path)
            ? nil : FileSystem.exists(path) ? "\(path) was changed since it was downloaded" : "\(path) was removed"
        if problem != record.lastError {
            record.setLastError(problem.map { SwoopError(.fileSystem, $0) })
            try store.update(record, durable: true)
        }
        return (published, problem != nil)
    }

    func applyRetention(_ records: [DownloadRecord]) throws -> Int {
        let history = configuration.history
        let finished = records.filter { $0.state == .completed || $0.state == .removed }
            .sorted { $0.updatedAt > $1.updatedAt }
        var forget = Set<Download.ID>()
        if let max = history.maxFinished, finished.count > max {
            forget.formUnion(finished[max...].map(\.id))
        }
        if let age = history.maxAge {
            let cutoff = Date().addingTimeInterval(-age.seconds)
            forget.formUnion(finished.filter { $0.updatedAt < cutoff }.map(\.id))
        }
        try store.delete(ids: Array(forget))
        return forget.count
    }

    /// `*.swoop` files in the directories the store knows that no unfinished record owns (left by a
    /// download whose record was removed, or by a power loss before its first checkpoint). A small
    /// file whose claim waits for its finish (see `Transfer.claimFile`) is owned through its tag: its
    /// record does not name it yet, and the next run takes it back.
    ///
    /// - Parameter records: Every record of the store.
    /// - Returns: Their paths, sorted by directory and name.
    public static func orphanedPartFiles(_ records: [DownloadRecord]) -> [String] {
        let unfinished = records.filter { $0.state != .completed && $0.state != .removed }
        let owned = Set(unfinished.compactMap(\.partPath))
        let owners = Set(unfinished.map(\.id.rawValue))
        var orphans: [String] = []
        for directory in Set(records.map(\.directory)).sorted() {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for name in names.sorted() where name.hasSuffix(FileNaming.partSuffix) {
                let path = (directory as NSString).appendingPathComponent(name)
                guard !owned.contains(path) else { continue }
                if let tag = PartFile.taggedDownload(path: path), owners.contains(tag) { continue }
                orphans.append(path)
            }
        }
        return orphans
    }
}
