import Foundation

// The end of a download: flush, verify, record completed, rename.

extension Transfer {
    /// Flushes and verifies the part file, records the download completed, then renames the file.
    ///
    /// The record comes first, durably: a crash between the two leaves a completed record beside its
    /// part file, and the next run finishes the rename (``finishInterruptedPublish(of:)``). So the
    /// rename needs no directory `fsync` of its own; the directories are flushed once at shutdown.
    func finish() throws -> Download {
        guard let part, let partPath = record.partPath, let finalPath = record.destinationPath else {
            throw SwoopError(.fileSystem, "no part file for \(record.url)")
        }
        try surfaceSyncFailure(part)
        // With the mtime: the record names it, and a rename redone after a power loss checks it.
        try part.syncNow(upTo: offset, metadata: true)
        record.totalBytes = record.totalBytes ?? offset
        if let expected = options.checksum {
            let actual = try Checksum.digest(of: partPath, algorithm: expected.algorithm)
            guard actual == expected.hex else {
                // The bytes are complete but wrong: keeping them would only fail again.
                try? resetToZero()
                unlink(partPath)
                self.part = nil
                record.fileName = nil
                throw SwoopError(
                    .checksumMismatch,
                    "\(expected.algorithm.rawValue) mismatch for \(record.url): expected \(expected.hex), got \(actual)"
                )
            }
        }
        // A rename keeps size and modification time: these are what the final file will show.
        let stat = try part.sizeAndModified()
        let before = record
        do {
            try recordCompleted(size: stat.size, modified: stat.modified)
            try FileSystem.publish(partPath, as: finalPath, replace: options.collisionPolicy == .overwrite)
        } catch {
            // Not recorded or not published, so not complete: the record goes back to what it was
            // (active), the bytes stay in the part file, and the failure that follows records it.
            record = before
            throw error
        }
        let directory = (finalPath as NSString).deletingLastPathComponent
        if store.isDurable {
            context.directorySyncs.add(directory)
        } else {
            // No record will survive to redo a rename lost in a power loss: make it durable now.
            FileSystem.syncDirectory(directory)
        }
        self.part = nil
        let done = record.snapshot()
        emit(.completed(done))
        return done
    }

    func recordCompleted(size: Int, modified: Double?) throws {
        try transition(.complete)
        record.segments = nil
        record.committedBytes = offset
        record.syncedBytes = offset
        record.finalSize = size
        record.finalModified = modified
        record.bytesPerSecond = 0
        record.setLastError(nil)
        record.updatedAt = Date()
        try storeCall { try store.update(record, durable: true) }
    }

    /// Finishes the rename of a download recorded completed whose process stopped before renaming
    /// its part file (or between the `link` and the `unlink` of the rename). Returns whether the
    /// final file is now in place; `false` when the part file is not the completed one.
    ///
    /// - Parameter directorySyncs: Where the rename is noted for the directory flush at shutdown.
    static func finishInterruptedPublish(of record: DownloadRecord, directorySyncs: DirectorySyncs) throws -> Bool {
        guard record.state == .completed, let partPath = record.partPath, let finalPath = record.destinationPath,
            record.isCompletedFile(at: partPath)
        else { return false }
        if FileSystem.isSameFile(partPath, finalPath) {
            unlink(partPath)
            return true
        }
        try FileSystem.publish(partPath, as: finalPath, replace: record.collisionPolicy == .overwrite)
        directorySyncs.add((finalPath as NSString).deletingLastPathComponent)
        return true
    }
}
