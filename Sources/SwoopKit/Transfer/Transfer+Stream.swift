import AsyncHTTPClient
import Foundation
import NIOCore

// The body into the part file: writes, checkpoints, background flushes and saved progress.

extension Transfer {
    func stream(_ body: HTTPClientResponse.Body) async throws {
        guard let part else { throw SwoopError(.fileSystem, "no part file open for \(record.url)") }
        let total = record.totalBytes
        // The body's start is the meter's first sample, so the first progress (at least 0.1 s on)
        // shows a rate: from a slow server it showed 0 B/s until a second sample, most of a small
        // file's time.
        lastProgress = .now
        meter.record(bytes: offset, at: lastProgress)
        for try await buffer in body {
            let count = buffer.readableBytes
            if let total, offset + count > total {
                throw SwoopError(.invalidResponse, "\(record.url) sent more bytes than its announced length \(total)")
            }
            // Paid for before it is written, so the bytes on disk (and the progress shown) follow the
            // limit from the first read on, with no lead of one read per connection.
            try await throttle.consume(count)
            let now = ContinuousClock.now
            // Checkpoint before a write that would leave more than `checkpointBytes` unrecorded, so a
            // crash never costs more than that (one socket read is at most `receiveBufferSize`).
            if offset + count - checkpointedBytes > configuration.durability.checkpointBytes
                || now - lastCheckpoint >= configuration.durability.checkpointInterval
            {
                if claimNotFlushed || claimPending {
                    // This checkpoint makes the claim (durable: a flush): on a disk thread.
                    try await onDisk { try $0.checkpoint(force: false, now: now) }
                } else {
                    try checkpoint(force: false, now: now)
                }
            }
            try part.write(buffer, at: offset)
            offset += count
            if offset - writebackFrom >= PartFile.writebackChunk {
                part.startWriteback(offset: writebackFrom, length: offset - writebackFrom)
                writebackFrom = offset
            }
            if now - lastProgress >= .milliseconds(100) {
                lastProgress = now
                meter.record(bytes: offset, at: now)
                emit(.progress(snapshot()))
            }
        }
    }

    /// Records `offset` in the store (and starts a background disk flush now and then).
    func checkpoint(force: Bool, now: ContinuousClock.Instant = .now) throws {
        guard let part else { return }
        if force || now - lastSync >= configuration.durability.syncInterval {
            lastSync = now
            part.syncInBackground(upTo: offset)
        }
        lastCheckpoint = now
        checkpointedBytes = offset
        try surfaceSyncFailure(part)
        if claimNotFlushed || claimPending {
            // The first checkpoint of a download whose claim was saved without a flush, or not yet
            // made, makes the record durable: from here on a power loss can only roll progress
            // back, never the name and validators (which would orphan the part file).
            claimNotFlushed = false
            record.committedBytes = offset
            record.syncedBytes = min(part.syncedBytes, offset)
            record.bootID = recordedBootID
            record.bytesPerSecond = meter.bytesPerSecond
            record.updatedAt = Date()
            return try writeRecord(durable: true)
        }
        try storeCall {
            try store.checkpoint(
                id: record.id, committedBytes: offset, syncedBytes: min(part.syncedBytes, offset), bootID: recordedBootID,
                bytesPerSecond: meter.bytesPerSecond
            )
        }
    }

    /// - Parameter durable: `false` only where a power loss that rolls the save back cannot make a
    ///   later run misread the part file (see `attempt()`).
    func saveProgress(error: SwoopError?, durable: Bool = true) throws {
        // This save records the state itself.
        context.activeMarks.remove(record.id)
        if let segmented {
            assert(!claimPending, "a split download claims before it writes")
            // Every segment's progress, after one more flush (or, if that fails, only what was flushed).
            if let part, (try? part.flush()) != nil {
                var plan = segmented.plan
                plan.recordSynced(Dictionary(uniqueKeysWithValues: plan.segments.map { ($0.start, $0.written) }))
                record.segments = plan.segments
            } else {
                segmented.distrustUnflushed()
                record.segments = segmented.plan.segments
            }
            offset = segmented.plan.completedBytes
            record.committedBytes = offset
            record.syncedBytes = segmented.plan.syncedBytes
            record.bootID = recordedBootID
            record.bytesPerSecond = 0
            record.setLastError(error)
            record.updatedAt = Date()
            return try storeCall { try store.update(record, durable: durable) }
        }
        if let part {
            if (try? part.syncNow(upTo: offset)) == nil {
                distrustUnflushed(part)
            }
        }
        stampProgress(error: error)
        try writeRecord(durable: durable)
        // This save is a checkpoint too: the next one is due a full interval or 1 MiB from here.
        lastCheckpoint = .now
        checkpointedBytes = offset
    }

    /// ``saveProgress(error:durable:)`` of a download about to write from zero (its part file holds
    /// nothing to flush), on a disk thread while the caller goes on: the record is taken as it is
    /// now. The caller awaits the task before it writes a byte and before any other save.
    func saveInBackground() -> Task<Void, any Error> {
        context.activeMarks.remove(record.id)
        stampProgress(error: nil)
        lastCheckpoint = .now
        checkpointedBytes = offset
        let (store, record) = (self.store, self.record)
        return Task { try await DiskWork.run { try withStoreErrors { try store.update(record, durable: true) } } }
    }

    /// Sets the record's progress as a save records it: what is written and flushed, the boot, the
    /// speed and the error.
    func stampProgress(error: SwoopError?) {
        record.committedBytes = offset
        record.syncedBytes = min(part?.syncedBytes ?? 0, offset)
        record.bootID = recordedBootID
        record.bytesPerSecond = record.state == .active ? meter.bytesPerSecond : 0
        record.setLastError(error)
        record.updatedAt = Date()
    }

    /// A failed background flush means the kernel may have dropped the pages: trust only what was
    /// flushed before, and stop.
    func surfaceSyncFailure(_ part: PartFile) throws {
        guard let failure = part.syncFailure else { return }
        distrustUnflushed(part)
        throw SwoopError.fileSystem("flush", path: part.path, errno: failure)
    }

    /// The disk refused a flush: pages past the last good flush may be lost. Cut the part file back
    /// to it, so that no later run (which trusts the file's length within a boot) takes them; if even
    /// the cut fails, the records name no boot, so only flushed bytes are trusted. A split file's
    /// segments (after its connections ended) keep only what each had flushed: its length tells
    /// nothing of them.
    func distrustUnflushed(_ part: PartFile) {
        if let segments = record.segments, let total = record.totalBytes {
            let plan = SegmentPlan(total: total, segments: segments).trusted(sameBoot: false)
            record.segments = plan.segments
            offset = plan.completedBytes
            return
        }
        offset = min(offset, part.syncedBytes)
        if (try? part.truncate(to: offset)) == nil { distrustFileLength = true }
    }
}
