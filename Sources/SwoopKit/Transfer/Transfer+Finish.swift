import Foundation

// The end of a download: flush, verify, record completed, rename (with the other downloads
// finishing at the same time: ``FinishGroups``).

extension Transfer {
    /// Flushes and verifies the part file, records the download completed, then renames the file,
    /// in a group with the downloads finishing now.
    ///
    /// The record comes first, durably: a crash between the two leaves a completed record beside its
    /// part file, and the next run finishes the rename (``finishInterruptedPublish(of:directorySyncs:)``).
    /// So the rename needs no directory `fsync` of its own; the directories are flushed once at shutdown.
    func finish() async throws -> Download {
        // What is restored if the group cannot finish it keeps the length the bytes proved.
        record.totalBytes = record.totalBytes ?? offset
        // No connection is used from here on: the slot goes to the next download.
        await context.bodyArrived()
        if options.checksum != nil {
            // Hashing reads the whole file: on this download's own disk thread, not in the group.
            try await onDisk { try $0.verifyChecksum() }
        }
        let done: Download
        do {
            done = try await context.finishes.finish(self)
        } catch let error as SwoopError where claimPending && error.code == .destinationExists {
            // The group's claim was refused: another unfinished download names the file. Fetched
            // again under another name (at most ``deferredClaimLimit`` bytes).
            throw try await onDisk { $0.giveUpPendingName(error) }
        }
        emit(.completed(done))
        return done
    }

    /// Checks the part file against the expected checksum; wrong bytes are deleted (keeping them
    /// would only fail again) and the download starts over next time.
    func verifyChecksum() throws {
        guard let expected = options.checksum, let partPath = record.partPath else { return }
        let actual = try Checksum.digest(of: partPath, algorithm: expected.algorithm)
        guard actual == expected.hex else {
            if claimPending {
                // Never named in the store: the tagged file goes and nothing is claimed for it (the
                // failure that follows records the download with no name and no bytes).
                dropPendingClaim()
                forgetBytes()
            } else {
                try? resetToZero()
                // (A pending claim refused by that reset gave the name and its file up already.)
                if part != nil { unlink(partPath) }
            }
            self.part = nil
            record.fileName = nil
            // With mirrors, the bytes may have come from any source: name them all.
            let mirrors = options.mirrors.isEmpty ? "" : " and its mirrors \(options.mirrors.map(\.absoluteString).joined(separator: ", "))"
            throw SwoopError(
                .checksumMismatch,
                "\(expected.algorithm.rawValue) mismatch for \(record.url)\(mirrors): expected \(expected.hex), got \(actual)"
            )
        }
    }

    /// A finish's first step, on the group's disk thread: flushes the part file (with its mtime:
    /// the record names it, and a rename redone after a power loss checks it) and moves the record
    /// to completed with the file's size and mtime. The store is written by the group, for all its
    /// downloads at once.
    ///
    /// - Parameter fileSystemFlushed: The group flushed the part file's whole file system since its
    ///   last byte was written (``GroupFlush/fileSystem``): the file only confirms its pages were
    ///   written without error.
    func prepareCompletion(fileSystemFlushed: Bool = false) throws {
        guard let part, record.partPath != nil, record.destinationPath != nil else {
            throw SwoopError(.fileSystem, "no part file for \(record.url)")
        }
        try surfaceSyncFailure(part)
        if fileSystemFlushed {
            try part.confirmFlushed(upTo: offset)
        } else {
            try part.syncNow(upTo: offset, metadata: true)
        }
        // A rename keeps size and modification time: these are what the final file will show.
        let stat = try part.sizeAndModified()
        if let total = record.totalBytes, stat.size != total {
            // Never a file of another length under the final name, whatever the records say.
            throw SwoopError(.fileSystem, "\(part.path) holds \(stat.size) bytes, not the \(total) of \(record.url)")
        }
        try markCompleted(size: stat.size, modified: stat.modified)
    }

    /// A finish's last step, once the store holds the record completed (and so its claim): the
    /// tag taken off (``PartFile/tag(_:)``, if any), so the final file carries nothing of Swoop's,
    /// then the rename.
    func publishCompleted() throws -> Download {
        guard let partPath = record.partPath, let finalPath = record.destinationPath else {
            throw SwoopError(.fileSystem, "no part file for \(record.url)")
        }
        part?.untag()
        try FileSystem.publish(partPath, as: finalPath, replace: options.collisionPolicy == .overwrite)
        let directory = PathNames.parent(of: finalPath)
        if store.isDurable {
            context.directorySyncs.add(directory)
        } else {
            // No record will survive to redo a rename lost in a power loss: make it durable now.
            FileSystem.syncDirectory(directory)
        }
        self.part = nil
        return record.snapshot()
    }

    /// Records the download completed, durably.
    func recordCompleted(size: Int, modified: Double?) throws {
        try markCompleted(size: size, modified: modified)
        try storeCall { try store.update(record, durable: true) }
    }

    /// Moves the record to completed with the final file's size and mtime, in memory.
    func markCompleted(size: Int, modified: Double?) throws {
        try transition(.complete)
        record.segments = nil
        record.committedBytes = offset
        record.syncedBytes = offset
        record.finalSize = size
        record.finalModified = modified
        record.bytesPerSecond = 0
        record.setLastError(nil)
        record.updatedAt = Date()
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
        // A process stopped between storing the claim and taking the tag off left it on.
        PartFile.untag(path: partPath)
        try FileSystem.publish(partPath, as: finalPath, replace: record.collisionPolicy == .overwrite)
        directorySyncs.add(PathNames.parent(of: finalPath))
        return true
    }
}
