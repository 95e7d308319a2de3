import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// How a download ended.
public enum DownloadOutcome: Sendable, Hashable {
    /// The file was downloaded (or finished) now.
    case downloaded(Download)
    /// The file was already complete from an earlier run; nothing was transferred.
    case alreadyComplete(Download)

    /// The final snapshot.
    public var download: Download {
        switch self {
        case .downloaded(let d), .alreadyComplete(let d): return d
        }
    }
}

/// Runs one download from URL to final file: lock, record, request, validate, stream to the part
/// file, checkpoint, verify and rename. I/O lives here; decisions are made by ``ResumeDecision``,
/// ``RedirectTracker``, ``Backoff`` and ``FileNaming``.
final class Transfer {
    private let request: DownloadRequest
    private let client: HTTPClientPool
    private let configuration: Configuration
    private let store: any DownloadStore
    private let logger: Logger
    private let emit: @Sendable (DownloadEvent) -> Void
    private let throttle: Throttle
    private let bootID = FileSystem.bootID
    /// Set when a failed flush could not be followed by cutting the part file back: the file's
    /// length must not be trusted even in this boot, so the records name no boot.
    private var distrustFileLength = false
    /// The boot the records name: this one, or none when the file's length is not to be trusted.
    private var recordedBootID: String { distrustFileLength ? "" : bootID }

    private var record: DownloadRecord
    private var part: PartFile?
    /// Bytes of the part file that are valid and written.
    private var offset = 0
    private var restarts = 0
    private var meter = SpeedMeter()
    private var lastProgress = ContinuousClock.now
    private var lastCheckpoint = ContinuousClock.now
    private var lastSync = ContinuousClock.now
    private var checkpointedBytes = 0
    /// Bytes written by this transfer in all attempts (a retry's progress test).
    private var bytesWritten = 0
    /// The connections of a download split into segments, while they run.
    private var segmented: SegmentedTransfer?
    /// The server refused the `bytes=0-` probe (an empty file answers 416): ask plainly.
    private var probeRefused = false
    /// The record naming this download's part file and validators was saved without a flush (a
    /// fresh download): the first checkpoint flushes it (see `checkpoint`).
    private var claimNotFlushed = false
    /// Where the disk writeback last started, for `startWriteback`.
    private var writebackFrom = 0
    /// Written bytes are handed to the disk's writeback in chunks of this size as they come, so the
    /// flush before the rename has little left to write.
    static let writebackChunk = 8 << 20

    private static let maxRestarts = 3

    /// Whether the manager's queue started this transfer: then a record that another process paused
    /// or removed meanwhile is left alone, not resumed as a rerun of the same command would.
    private let queued: Bool

    init(
        request: DownloadRequest, client: HTTPClientPool, configuration: Configuration, store: any DownloadStore,
        logger: Logger, queued: Bool = false, throttle: Throttle = .none, emit: @escaping @Sendable (DownloadEvent) -> Void
    ) {
        self.throttle = throttle
        self.request = request
        self.queued = queued
        self.client = client
        self.configuration = configuration
        self.store = store
        self.logger = logger
        self.emit = emit
        self.record = DownloadRecord(
            url: request.url.absoluteString, directory: request.directory, requestedName: request.fileName ?? "",
            bootID: FileSystem.bootID, checksum: request.checksum?.description
        )
        self.record.headers = request.headers.map { HTTPHeaderField(name: $0.name, value: $0.value) }
        self.record.collisionPolicy = request.collisionPolicy
        self.record.priority = request.priority
    }

    // MARK: - Run

    func run() async throws -> DownloadOutcome {
        try FileSystem.checkWritableDirectory(request.directory)
        let lock = try configuration.lockDirectory.map { directory in
            try ProcessLock.acquire(key: Self.lockKey(for: record), in: directory, what: request.url.absoluteString)
        }
        defer { withExtendedLifetime(lock) {} }

        let found = try storeCall { try store.find(url: record.url, directory: record.directory, requestedName: record.requestedName) }
        if queued, found == nil || found?.state == .paused || found?.state == .removed {
            // Checked under the lock, which `swoop pause` and `swoop rm` also take: no race.
            throw SwoopError(.cancelled, "\(record.url) was paused or removed by another swoop process")
        }
        if let existing = found {
            let asked = record
            record = existing
            record.checksum = asked.checksum
            record.headers = asked.headers
            // An interrupted rename is finished under the policy it was started with.
            if let done = try recogniseCompleted() { return .alreadyComplete(done) }
            record.collisionPolicy = asked.collisionPolicy
            try returnToQueue()
            try reopenPartFile()
            if record.state == .completed { return .alreadyComplete(record.snapshot()) }
        } else {
            try storeCall { try store.save(record) }
        }
        emit(.added(snapshot()))
        return .downloaded(try await transferWithRetries())
    }

    /// What a download's cross-process lock is keyed by (its URL, directory and requested name).
    static func lockKey(for record: DownloadRecord) -> String {
        "\(record.url)\n\(record.directory)\n\(record.requestedName)"
    }

    /// A completed record whose file is still as Swoop left it needs no work.
    private func recogniseCompleted() throws -> Download? {
        guard record.state == .completed, let path = record.destinationPath else { return nil }
        if record.isCompletedFile(at: path) {
            if let partPath = record.partPath, FileSystem.isSameFile(partPath, path) { unlink(partPath) }
            return record.snapshot()
        }
        if (try? Self.finishInterruptedPublish(of: record)) == true {
            return record.snapshot()
        }
        if let partPath = record.partPath, let size = record.finalSize, FileSystem.sizeAndModified(partPath)?.size == size {
            // The completed bytes are in the part file, but it cannot be renamed as it is (its name
            // was taken meanwhile, or its mtime on disk predates the record after a power loss).
            // Continue from them: the server confirms them (416 under If-Range) before the rename.
            emit(.notice(record.snapshot(), "\(partPath) holds the completed download but was not renamed; checking it with the server"))
            record.state = try DownloadStateMachine.next(after: .completed, on: .invalidate).get()
            record.committedBytes = size
            record.syncedBytes = size
            record.bootID = bootID
            record.finalSize = nil
            record.finalModified = nil
            try storeCall { try store.update(record, durable: true) }
            return nil
        }
        let why = FileSystem.exists(path) ? "was changed since it was downloaded" : "was removed"
        emit(.notice(record.snapshot(), "\(path) \(why); downloading it again"))
        // A changed file is no longer ours: the collision policy decides about it like any file.
        let keep = record
        record = DownloadRecord(
            id: keep.id, url: keep.url, directory: keep.directory, requestedName: keep.requestedName,
            bootID: bootID, checksum: keep.checksum, now: keep.createdAt
        )
        try storeCall { try store.update(record, durable: true) }
        return nil
    }

    /// Running the same download again resumes it: a paused or failed one goes back to waiting, and
    /// one left `active` by a process that died (the lock we hold proves it is gone) is recovered.
    private func returnToQueue() throws {
        switch record.state {
        case .paused, .failed: try transition(.resume)
        case .active: try transition(.recover)
        case .removed:
            record = DownloadRecord(
                id: record.id, url: record.url, directory: record.directory, requestedName: record.requestedName,
                bootID: bootID, checksum: record.checksum
            )
        case .waiting, .completed: break
        }
    }

    private func transition(_ request: DownloadStateMachine.Request) throws {
        record.state = try DownloadStateMachine.next(after: record.state, on: request).get()
    }

    /// Reopens an unfinished download's part file and trusts only what both the store and the file
    /// vouch for.
    private func reopenPartFile() throws {
        guard let partPath = record.partPath, let finalPath = record.destinationPath else { return }
        if FileSystem.isSameFile(partPath, finalPath) {
            // The process died between the `link` that published the file and the `unlink` of its
            // part name: finish that step.
            unlink(partPath)
        }
        if !FileSystem.exists(partPath), let total = record.totalBytes, record.committedBytes == total,
            FileSystem.sizeAndModified(finalPath)?.size == total
        {
            // The process died between the rename and recording it (earlier Swoop renamed first):
            // the file is complete.
            offset = total
            try transition(.start)
            let stat = FileSystem.sizeAndModified(finalPath)
            return try recordCompleted(size: stat?.size ?? total, modified: stat?.modified)
        }
        if let segments = record.segments {
            return try reopenSegments(segments, partPath: partPath)
        }
        guard let file = try PartFile.open(partPath, exclusive: false) else { return }
        let trusted = record.trustedBytes(fileSize: try file.size(), currentBootID: bootID)
        try file.truncate(to: trusted)
        file.assumeSynced(record.bootID == bootID ? min(record.syncedBytes, trusted) : trusted)
        part = file
        offset = trusted
        try checkpoint(force: true)
    }

    /// Reopens a download split into segments. Its part file has holes, so its length says nothing:
    /// each segment's recorded progress is trusted in the same boot, its flushed progress after a
    /// reboot. Segments that do not add up to the file, or a missing part file, start it over.
    private func reopenSegments(_ segments: [Segment], partPath: String) throws {
        let plan = record.totalBytes.map { SegmentPlan(total: $0, segments: segments) }
        guard let plan, plan.isConsistent, FileSystem.exists(partPath),
            let file = try PartFile.open(partPath, exclusive: false)
        else {
            emit(.notice(snapshot(), "the saved segments of \(record.url) cannot be trusted; starting over"))
            if FileSystem.exists(partPath), let file = try? PartFile.open(partPath, exclusive: false) { part = file }
            return try resetToZero()
        }
        let trusted = plan.trusted(sameBoot: record.bootID == bootID)
        part = file
        record.segments = trusted.segments
        offset = trusted.completedBytes
        record.committedBytes = offset
        record.syncedBytes = trusted.syncedBytes
        try storeCall { try store.update(record, durable: true) }
    }

    private func transferWithRetries() async throws -> Download {
        let backoff = Backoff(policy: configuration.retry)
        var failures = 0
        // Active from the first connection attempt to the end, backoff sleeps included. The first
        // save of progress records it; one whose first answer is slow to come is marked active for
        // other processes (`swoop ls`) after a moment, so a small download writes one record less.
        try transition(.start)
        ActiveMarks.shared.add(record.id, store: store, after: configuration.durability.activeMarkDelay)
        defer { ActiveMarks.shared.remove(record.id) }
        while true {
            let writtenBefore = bytesWritten
            do {
                try Task.checkCancellation()
                if try await attempt() {
                    // fdatasync, rename, directory fsync and a durable save: on a disk thread.
                    let transfer = Exclusive(value: self)
                    return try await DiskWork.run { try transfer.value.finish() }
                }
                continue
            } catch let error as CancellationError {
                throw stop(SwoopError(.cancelled, "download of \(record.url) interrupted", cause: error), state: .paused)
            } catch {
                let swoopError = classify(error)
                if swoopError.code == .cancelled || Task.isCancelled {
                    throw stop(SwoopError(.cancelled, "download of \(record.url) interrupted", cause: error), state: .paused)
                }
                guard swoopError.isRetryable else { throw stop(swoopError, state: .failed) }
                if bytesWritten > writtenBefore { failures = 0 }
                failures += 1
                guard failures <= configuration.retry.maxRetries else {
                    throw stop(swoopError, state: .failed)
                }
                let retryAfter = (swoopError.cause as? RetryAfterHint)?.delay
                let delay = backoff.delay(beforeRetry: failures, retryAfter: retryAfter, jitter: Double.random(in: 0..<1))
                try? saveProgress(error: swoopError)
                emit(.notice(snapshot(), "\(swoopError.message); retrying in \(ByteFormatting.duration(delay.seconds)) (\(failures)/\(configuration.retry.maxRetries))"))
                do {
                    try await Task.sleep(for: delay)
                } catch {
                    throw stop(SwoopError(.cancelled, "download of \(record.url) interrupted", cause: error), state: .paused)
                }
            }
        }
    }

    /// Saves progress, records the error and state, and returns the error to throw.
    private func stop(_ error: SwoopError, state: Download.State) -> SwoopError {
        let request: DownloadStateMachine.Request = state == .paused ? .pause : .fail
        record.state = (try? DownloadStateMachine.next(after: record.state, on: request).get()) ?? state
        try? saveProgress(error: state == .failed ? error : nil)
        let snapshot = snapshot()
        emit(state == .paused ? .paused(snapshot) : .failed(snapshot, error))
        return error
    }

    /// - Parameter durable: `false` only where a power loss that rolls the save back cannot make a
    ///   later run misread the part file (see `attempt()`).
    private func saveProgress(error: SwoopError?, durable: Bool = true) throws {
        // This save records the state itself.
        ActiveMarks.shared.remove(record.id)
        if let segmented {
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
            record.lastError = error?.message
            record.updatedAt = Date()
            return try storeCall { try store.update(record, durable: durable) }
        }
        if let part {
            if (try? part.syncNow(upTo: offset)) == nil {
                distrustUnflushed(part)
            }
        }
        record.committedBytes = offset
        record.syncedBytes = min(part?.syncedBytes ?? 0, offset)
        record.bootID = recordedBootID
        record.bytesPerSecond = record.state == .active ? meter.bytesPerSecond : 0
        record.lastError = error?.message
        record.updatedAt = Date()
        try storeCall { try store.update(record, durable: durable) }
        // This save is a checkpoint too: the next one is due a full interval or 1 MiB from here.
        lastCheckpoint = .now
        checkpointedBytes = offset
    }

    // MARK: - One attempt

    /// One request. Returns `true` when the part file holds the whole file, `false` to go again at
    /// once (after a restart from zero).
    private func attempt() async throws -> Bool {
        if let segments = record.segments, let total = record.totalBytes, part != nil {
            // A download already split into segments continues on all its connections at once.
            emit(.started(snapshot()))
            return try await runSegments(SegmentPlan(total: total, segments: segments), first: nil)
        }
        var saved = SavedRepresentation(
            offset: offset, totalBytes: record.totalBytes, etag: record.etag, lastModified: record.lastModified
        )
        var rangeHeaders = ResumeDecision.rangeHeaders(for: saved)
        let probing = offset == 0 && rangeHeaders?.isEmpty == true && configuration.segments.maxConnections > 1 && !probeRefused
        if probing {
            // A bounded first range tells whether the server honours ranges (206) and the length,
            // without pulling more than one segment's worth down this connection.
            rangeHeaders = [("Range", "bytes=0-\(configuration.segments.minSplitSize - 1)")]
        }
        if rangeHeaders == nil {
            emit(.notice(snapshot(), "cannot validate the saved bytes of \(record.url) (no ETag, Last-Modified or length); starting over"))
            try resetToZero()
            saved.offset = 0
            rangeHeaders = []
        }
        let response = try await send(extraHeaders: rangeHeaders ?? [])
        let head = ResponseHead(response)
        switch ResumeDecision.decide(head, saved: saved) {
        case .status(416) where probing:
            await Self.discard(response.body)
            probeRefused = true
            return false
        case .status(let status):
            throw await statusError(status, response: response)
        case .complete:
            await Self.discard(response.body)
            return true
        case .restart(let reason):
            await Self.discard(response.body)
            try restart(because: reason)
            return false
        case .write(let start, let total, let restartReason):
            if let restartReason {
                // The body that follows is the whole file: no extra request, so no restart budget spent.
                emit(.notice(snapshot(), "\(restartReason); starting over from 0"))
                try resetToZero()
            }
            // A record that names no representation and no progress (a fresh download, or one
            // durably reset to zero) can be rolled back by a power loss without harm: the bytes that
            // follow are then attributed to nothing. Only then may the save below skip the flush.
            let blank = record.etag == nil && record.lastModified == nil && record.committedBytes == 0 && record.segments == nil
            if part == nil {
                try claimFile(response: response)
            } else if start == 0, restartReason == nil {
                // A whole body into a part file that may hold more (an earlier attempt's bytes past
                // a lowered offset): nothing beyond what this body writes may remain.
                try part?.truncate(to: 0)
            }
            record.totalBytes = total
            // A 206 that omits validators continues the saved representation: keep what we know.
            record.etag = head.etag ?? (start > 0 ? record.etag : nil)
            record.lastModified = head.lastModified ?? (start > 0 ? record.lastModified : nil)
            record.lastError = nil
            offset = start
            // The validators reach the store before the first byte of this representation reaches the file.
            if let plan = splitPlan(start: start, total: total, status: head.status) {
                record.segments = plan.segments
                try saveProgress(error: nil)
                emit(.started(snapshot()))
                return try await runSegments(plan, first: response.body)
            }
            try saveProgress(error: nil, durable: !blank)
            claimNotFlushed = blank
            emit(.started(snapshot()))
            try await stream(response.body)
            if probing, let total, offset < total, let range = head.contentRange.flatMap(ContentRange.init(parsing:)),
                offset == range.end + 1
            {
                // The bounded probe ended where it should and no split applies: go on from here.
                return false
            }
            if let total, offset < total {
                throw SwoopError(.network, "connection closed early: got \(offset) of \(total) bytes from \(record.url)", isRetryable: true)
            }
            return true
        }
    }

    // MARK: - Segments

    /// The split of a fresh download over several connections, when it applies: more than one
    /// connection allowed, a `206` to the probe (ranges work), a known length of at least two
    /// minimum segments, and a validator that every segment's answer can be checked against.
    /// Otherwise `nil`: one connection, silently.
    private func splitPlan(start: Int, total: Int?, status: Int) -> SegmentPlan? {
        let settings = configuration.segments
        guard settings.maxConnections > 1, start == 0, status == 206, let total, total >= 2 * settings.minSplitSize,
            record.etag.map({ !$0.hasPrefix("W/") }) == true || record.lastModified != nil
        else { return nil }
        let plan = SegmentPlan.initial(total: total, connections: settings.maxConnections, minSplitSize: settings.minSplitSize)
        return plan.segments.count > 1 ? plan : nil
    }

    /// Runs the segments to the end. A representation change restarts the download from zero (and
    /// returns `false` to go again); anything else ends as the connections' error.
    private func runSegments(_ plan: SegmentPlan, first: HTTPClientResponse.Body?) async throws -> Bool {
        guard let part else { throw SwoopError(.fileSystem, "no part file open for \(record.url)") }
        let emit = self.emit
        let base = snapshot()
        let engine = SegmentedTransfer(
            plan: plan,
            context: .init(
                client: client, configuration: configuration, logger: logger, url: request.url,
                headers: configuration.headers + request.headers, part: part, store: store, recordID: record.id,
                bootID: recordedBootID,
                saved: SavedRepresentation(offset: 0, totalBytes: plan.total, etag: record.etag, lastModified: record.lastModified),
                throttle: throttle,
                progress: { done, speed, connections in
                    var download = base
                    download.completedBytes = done
                    download.bytesPerSecond = speed
                    download.connections = connections
                    emit(.progress(download))
                }
            )
        )
        segmented = engine
        let before = plan.completedBytes
        do {
            try await engine.run(connections: configuration.segments.maxConnections, first: first)
        } catch let change as SegmentRestart {
            bytesWritten += engine.plan.completedBytes - before
            try restart(because: change.reason)
            return false
        } catch {
            bytesWritten += engine.plan.completedBytes - before
            record.segments = engine.plan.segments
            throw error
        }
        bytesWritten += engine.plan.completedBytes - before
        offset = plan.total
        record.segments = engine.plan.segments
        segmented = nil
        return true
    }

    private func restart(because reason: String) throws {
        restarts += 1
        guard restarts <= Self.maxRestarts else {
            throw SwoopError(.invalidResponse, "giving up on \(record.url): it keeps changing (\(reason))")
        }
        emit(.notice(snapshot(), "\(reason); starting over from 0"))
        try resetToZero()
    }

    private func resetToZero() throws {
        offset = 0
        segmented = nil
        record.segments = nil
        record.totalBytes = nil
        record.etag = nil
        record.lastModified = nil
        record.committedBytes = 0
        record.syncedBytes = 0
        try storeCall { try store.update(record, durable: true) }
        try part?.truncate(to: 0)
    }

    /// Sends a GET with the configured headers, the request's and `extraHeaders` (the range).
    private func send(extraHeaders: [(name: String, value: String)]) async throws -> HTTPClientResponse {
        try await client.swoopGet(
            request.url, headers: configuration.headers + request.headers + extraHeaders, configuration: configuration, logger: logger,
            slow: throttle.isSlow
        )
    }

    private func statusError(_ status: Int, response: HTTPClientResponse) async -> SwoopError {
        await Self.discard(response.body)
        let reason = HTTPResponseStatus(statusCode: status).reasonPhrase
        let retryable = status == 408 || status == 429 || status >= 500
        let hint = response.headers.first(name: "Retry-After").flatMap { RetryAfter.delay(from: $0, now: Date()) }
        return SwoopError(
            .httpStatus, "HTTP \(status) \(reason) from \(record.url)", status: status,
            cause: hint.map { RetryAfterHint(delay: $0) }, isRetryable: retryable
        )
    }

    /// Reads and drops a small body so the connection can be reused; stops after 64 KiB.
    static func discard(_ body: HTTPClientResponse.Body) async {
        var seen = 0
        do {
            for try await chunk in body {
                seen += chunk.readableBytes
                if seen > 1 << 16 { break }
            }
        } catch {}
    }

    // MARK: - File

    /// Chooses the final name (server's, URL's or the user's), applies the collision policy and
    /// claims the part file with `O_EXCL` so no two downloads share one.
    private func claimFile(response: HTTPClientResponse) throws {
        let base = request.fileName
            ?? FileNaming.suggestedName(contentDisposition: response.headers.first(name: "Content-Disposition"), url: request.url)
        for attempt in 0..<10_000 {
            let name = FileNaming.candidate(base, attempt: attempt)
            let finalPath = (request.directory as NSString).appendingPathComponent(name)
            let partPath = (request.directory as NSString).appendingPathComponent(FileNaming.partFileName(for: name))
            if FileSystem.exists(finalPath) {
                switch request.collisionPolicy {
                case .overwrite: break
                case .fail: throw SwoopError(.destinationExists, "\(finalPath) already exists (use --overwrite to replace it)")
                case .rename: continue
                }
            }
            // A part file, or a name an unfinished download in the store will resume into, belongs to
            // someone else: reusing it could splice two downloads.
            let claimedBy = try storeCall { try store.unfinished(directory: request.directory, fileName: name) }
            let isFree = claimedBy == nil || claimedBy?.id == record.id
            var file = isFree ? try PartFile.open(partPath, exclusive: true) : nil
            if file == nil, isFree {
                file = Self.adoptEmptyLeftover(partPath)
            }
            guard let file else {
                if request.collisionPolicy == .rename { continue }
                let owner = claimedBy.map { " by the download of \($0.url)" } ?? ""
                throw SwoopError(.destinationExists, "\(finalPath) is in use\(owner) (\(partPath) exists); choose another name")
            }
            part = file
            record.fileName = name
            return
        }
        throw SwoopError(.destinationExists, "no free file name for \(base) in \(request.directory)")
    }

    /// A part file that exists empty, unlocked and claimed by no record is what a process killed
    /// between creating it and recording its name leaves (bytes are written only after the name is
    /// recorded): taking it loses nothing. One with bytes, or locked by a live process, is left alone.
    private static func adoptEmptyLeftover(_ path: String) -> PartFile? {
        guard let file = try? PartFile.open(path, exclusive: false) else { return nil }
        return (try? file.size()) == 0 ? file : nil
    }

    private func stream(_ body: HTTPClientResponse.Body) async throws {
        guard let part else { throw SwoopError(.fileSystem, "no part file open for \(record.url)") }
        let total = record.totalBytes
        for try await buffer in body {
            let count = buffer.readableBytes
            if let total, offset + count > total {
                throw SwoopError(.invalidResponse, "\(record.url) sent more bytes than its announced length \(total)")
            }
            let now = ContinuousClock.now
            // Checkpoint before a write that would leave more than `checkpointBytes` unrecorded, so a
            // crash never costs more than that (one socket read is at most `receiveBufferSize`).
            if offset + count - checkpointedBytes > configuration.durability.checkpointBytes
                || now - lastCheckpoint >= configuration.durability.checkpointInterval
            {
                try checkpoint(force: false, now: now)
            }
            try part.write(buffer, at: offset)
            offset += count
            bytesWritten += count
            if offset - writebackFrom >= Self.writebackChunk {
                part.startWriteback(offset: writebackFrom, length: offset - writebackFrom)
                writebackFrom = offset
            }
            if now - lastProgress >= .milliseconds(100) {
                lastProgress = now
                meter.record(bytes: offset, at: now)
                emit(.progress(snapshot()))
            }
            try await throttle.consume(count)
        }
    }

    /// Records `offset` in the store (and starts a background disk flush now and then).
    private func checkpoint(force: Bool, now: ContinuousClock.Instant = .now) throws {
        guard let part else { return }
        if force || now - lastSync >= configuration.durability.syncInterval {
            lastSync = now
            part.syncInBackground(upTo: offset)
        }
        lastCheckpoint = now
        checkpointedBytes = offset
        try surfaceSyncFailure(part)
        if claimNotFlushed {
            // The first checkpoint of a download whose claim was saved without a flush makes the
            // record durable: from here on a power loss can only roll progress back, never the
            // name and validators (which would orphan the part file). Small files never get here.
            claimNotFlushed = false
            record.committedBytes = offset
            record.syncedBytes = min(part.syncedBytes, offset)
            record.bootID = recordedBootID
            record.bytesPerSecond = meter.bytesPerSecond
            record.updatedAt = Date()
            return try storeCall { try store.update(record, durable: true) }
        }
        try storeCall {
            try store.checkpoint(
                id: record.id, committedBytes: offset, syncedBytes: min(part.syncedBytes, offset), bootID: recordedBootID,
                bytesPerSecond: meter.bytesPerSecond
            )
        }
    }

    /// A failed background flush means the kernel may have dropped the pages: trust only what was
    /// flushed before, and stop.
    private func surfaceSyncFailure(_ part: PartFile) throws {
        guard let failure = part.syncFailure else { return }
        distrustUnflushed(part)
        throw SwoopError.fileSystem("flush", path: part.path, errno: failure)
    }

    /// The disk refused a flush: pages past the last good flush may be lost. Cut the part file back
    /// to it, so that no later run (which trusts the file's length within a boot) takes them; if even
    /// the cut fails, the records name no boot, so only flushed bytes are trusted.
    private func distrustUnflushed(_ part: PartFile) {
        offset = min(offset, part.syncedBytes)
        if (try? part.truncate(to: offset)) == nil { distrustFileLength = true }
    }

    /// Flushes and verifies the part file, records the download completed, then renames the file.
    ///
    /// The record comes first, durably: a crash between the two leaves a completed record beside its
    /// part file, and the next run finishes the rename (``finishInterruptedPublish(of:)``). So the
    /// rename needs no directory `fsync` of its own; the directories are flushed once at shutdown.
    private func finish() throws -> Download {
        guard let part, let partPath = record.partPath, let finalPath = record.destinationPath else {
            throw SwoopError(.fileSystem, "no part file for \(record.url)")
        }
        try surfaceSyncFailure(part)
        // With the mtime: the record names it, and a rename redone after a power loss checks it.
        try part.syncNow(upTo: offset, metadata: true)
        record.totalBytes = record.totalBytes ?? offset
        if let expected = request.checksum {
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
            try FileSystem.publish(partPath, as: finalPath, replace: request.collisionPolicy == .overwrite)
        } catch {
            // Not recorded or not published, so not complete: the record goes back to what it was
            // (active), the bytes stay in the part file, and the failure that follows records it.
            record = before
            throw error
        }
        if !store.isDurable {
            // No record will survive to redo a rename lost in a power loss: make it durable now.
            FileSystem.syncDirectory((finalPath as NSString).deletingLastPathComponent)
        }
        self.part = nil
        let done = record.snapshot()
        emit(.completed(done))
        return done
    }

    private func recordCompleted(size: Int, modified: Double?) throws {
        try transition(.complete)
        record.segments = nil
        record.committedBytes = offset
        record.syncedBytes = offset
        record.finalSize = size
        record.finalModified = modified
        record.bytesPerSecond = 0
        record.lastError = nil
        record.updatedAt = Date()
        try storeCall { try store.update(record, durable: true) }
    }

    /// Finishes the rename of a download recorded completed whose process stopped before renaming
    /// its part file (or between the `link` and the `unlink` of the rename). Returns whether the
    /// final file is now in place; `false` when the part file is not the completed one.
    static func finishInterruptedPublish(of record: DownloadRecord) throws -> Bool {
        guard record.state == .completed, let partPath = record.partPath, let finalPath = record.destinationPath,
            record.isCompletedFile(at: partPath)
        else { return false }
        if FileSystem.isSameFile(partPath, finalPath) {
            unlink(partPath)
            return true
        }
        try FileSystem.publish(partPath, as: finalPath, replace: record.collisionPolicy == .overwrite)
        return true
    }

    // MARK: - Helpers

    private func snapshot() -> Download {
        var download = record.snapshot(bytesPerSecond: meter.bytesPerSecond)
        if record.state != .completed { download.completedBytes = offset }
        return download
    }

    private func storeCall<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SwoopError {
            throw error
        } catch {
            throw SwoopError(.store, "cannot update the download state: \(error)", cause: error)
        }
    }

    private func classify(_ error: any Error) -> SwoopError {
        ErrorClassifier.classify(error, url: record.url, timeouts: configuration.timeouts)
    }
}

extension ResponseHead {
    /// The parts of a response's head that resume decisions look at.
    init(_ response: HTTPClientResponse) {
        self.init(
            status: Int(response.status.code), etag: response.headers.first(name: "ETag"),
            lastModified: response.headers.first(name: "Last-Modified"),
            contentLength: response.headers.first(name: "Content-Length").flatMap { Int($0) },
            contentRange: response.headers.first(name: "Content-Range")
        )
    }
}

/// Carries a server's `Retry-After` inside a ``SwoopError``'s cause.
struct RetryAfterHint: Error, Sendable {
    var delay: Duration
}

extension TimeAmount {
    /// Converts, saturating at about 292 years instead of overflowing.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let (nanoseconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        self = overflow ? .nanoseconds(seconds < 0 ? 0 : .max) : .nanoseconds(nanoseconds &+ attoseconds / 1_000_000_000)
    }
}
