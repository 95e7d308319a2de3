import AsyncHTTPClient
import Foundation
import Logging
import NIOCore

/// Runs one download from its record to the final file: recognise or reopen, request, validate,
/// stream to the part file, checkpoint, verify and rename. I/O lives here; decisions are made by
/// ``ResumeDecision``, ``RedirectTracker``, ``Backoff``, ``FileNaming`` and ``DownloadStateMachine``.
///
/// The caller holds the download's ``DownloadLock`` and hands over the record it read under it: a
/// transfer never looks its download up again.
///
/// The work is cut by job: `Transfer+Open` (recognise, reopen, claim a name), `Transfer+Attempt`
/// (requests and retries), `Transfer+Stream` (bytes, checkpoints, flushes), `Transfer+Segments`
/// (several connections) and `Transfer+Finish` (verify, record, rename).
final class Transfer {
    /// What a transfer works with, from the manager that runs it.
    struct Context: Sendable {
        var client: HTTPClientPool
        var configuration: Configuration
        var store: any DownloadStore
        var logger: Logger
        /// The download's rate limits (its own, then the manager's overall one).
        var throttle: Throttle = .none
        /// Marks a download whose first answer is slow to come `active` for other processes.
        var activeMarks: ActiveMarks
        /// Where a finished file's rename is noted, for the directory flush at shutdown.
        var directorySyncs: DirectorySyncs
        /// Where downloads that finish together are flushed, recorded and renamed as a group.
        var finishes: FinishGroups
        var emit: @Sendable (DownloadEvent) -> Void
        /// How a stop is recorded when the task is cancelled: `pause` when the caller paused the
        /// download, `interrupt` when its process or task is stopping.
        var stopRequest: @Sendable () -> DownloadStateMachine.Request = { .interrupt }
        /// Called once the body has all arrived, before the finish (verify, flush, record, rename):
        /// the manager gives the download's slot to the next one (``DownloadQueue/finishing(_:)``).
        var bodyArrived: @Sendable () async -> Void = {}
    }

    /// What the download was asked for this time: the stored options with the request's laid over
    /// them (see ``DownloadRecord/apply(_:)``); a stored record takes them on when it is reused.
    struct Options: Sendable {
        var checksum: Checksum?
        /// Request headers of this download (after the configured ones).
        var headers: [(name: String, value: String)]
        var collisionPolicy: CollisionPolicy
        var settings: DownloadSettings
        /// More URLs of the same file (``DownloadRecord/mirrors``), parsed.
        var mirrors: [URL]
        /// A completed download is checked with the server, and downloaded again when it changed
        /// (``DownloadRequest/refresh``).
        var refresh = false

        /// The options a record holds.
        ///
        /// - Throws: ``SwoopError/Code/invalidArgument`` when the stored checksum cannot be read.
        init(_ record: DownloadRecord) throws {
            checksum = try record.checksum.map { try Checksum(parsing: $0) }
            headers = record.headers.map { ($0.name, $0.value) }
            collisionPolicy = record.collisionPolicy
            settings = record.settings
            mirrors = try record.mirrors.map(DownloadRequest.validate)
        }
    }

    let context: Context
    /// The URL requests go to, parsed once: the download's, until it fails for good and a mirror
    /// takes its place.
    var url: URL
    /// The mirrors not in use as `url` (a segmented download uses them all).
    var spareSources: [URL]
    var options: Options
    /// Whether the record was made for this run and is not in the store yet.
    let isNew: Bool
    /// Whether this transfer announces the download (``DownloadEvent/added(_:)``): a direct
    /// download does; a queued one was announced when it was added.
    let announcesAdded: Bool
    let bootID = FileSystem.bootID
    /// Set when a failed flush could not be followed by cutting the part file back: the file's
    /// length must not be trusted even in this boot, so the records name no boot.
    var distrustFileLength = false
    /// The boot the records name: this one, or none when the file's length is not to be trusted.
    var recordedBootID: String { distrustFileLength ? "" : bootID }

    var record: DownloadRecord
    var part: PartFile?
    /// Bytes of the part file that are valid and written.
    var offset = 0
    var restarts = 0
    var meter = SpeedMeter()
    var lastProgress = ContinuousClock.now
    var lastCheckpoint = ContinuousClock.now
    var lastSync = ContinuousClock.now
    var checkpointedBytes = 0
    /// The connections of a download split into segments, while they run.
    var segmented: SegmentedTransfer?
    /// The server refused the `bytes=0-` probe (an empty file answers 416): ask plainly.
    var probeRefused = false
    /// The mirrors were asked for their first pieces with a probe (``EarlyRanges``): not again.
    var askedEarly = false
    /// The record naming this download's part file and validators was saved without a flush (a
    /// fresh download): the first checkpoint flushes it (see `checkpoint`).
    var claimNotFlushed = false
    /// The claim of this fresh download's part file is not in the store yet (see `claimFile`): its
    /// first checkpoint, its stop or its finish (with the finishing group's one transaction) makes
    /// it, and the part file names the download meanwhile (``PartFile/tag(_:)``).
    var claimPending = false
    /// Whether a claim may wait (`claimPending`): not after a waiting claim was refused.
    var mayDeferClaim = true
    /// Where the disk writeback last started, for `startWriteback`.
    var writebackFrom = 0
    /// The retry this transfer waits for, shown in its snapshots until the next attempt starts.
    var retrying: Download.Retry?
    /// The part file holds bytes of an earlier run: the first answer that continues them says so
    /// once (`announceContinuation`), as `wget -c` and `curl -C -` do.
    var continuesEarlierRun = false
    /// The URL the saved bytes came from, until `url`'s first answer proves or disproves that it
    /// serves their file (a download moved to a new URL, a mirror taking over): named in notices.
    var movedFrom: String?
    /// What `url`'s resumed answers must show when it did not write the saved bytes; `nil` once it
    /// wrote them all (from zero).
    var sourceProof: SourceProof?

    static let maxRestarts = 3

    var configuration: Configuration { context.configuration }
    /// What a mirror's answers must show: the strong ETag, or with a checksum the length alone.
    var mirrorProof: SourceProof { .forMirror(verifiedByChecksum: options.checksum != nil) }
    var store: any DownloadStore { context.store }
    var emit: @Sendable (DownloadEvent) -> Void { context.emit }
    var throttle: Throttle { context.throttle }
    /// The headers of every request: the configured ones, then this download's.
    var requestHeaders: [(name: String, value: String)] { configuration.headers + options.headers }
    /// The file name asked for (`-o`), if any.
    var requestedName: String? { record.requestedName.isEmpty ? nil : record.requestedName }

    /// - Parameters:
    ///   - record: The download's record, read under its lock (or made now, with `isNew`).
    ///   - url: The record's URL, parsed.
    ///   - options: What was asked this time (a stored record takes them on).
    init(record: DownloadRecord, url: URL, options: Options, isNew: Bool, announcesAdded: Bool, context: Context) {
        self.record = record
        self.url = url
        self.options = options
        self.isNew = isNew
        self.announcesAdded = announcesAdded
        self.context = context
        self.movedFrom = record.movedFrom
        self.sourceProof = record.movedFrom.map { _ in .forMovedURL(strongETag: record.strongETag) }
        self.spareSources = options.mirrors.filter { $0 != url }
    }

    /// Runs the download to its end.
    ///
    /// - Returns: How it ended.
    /// - Throws: ``SwoopError``; ``SwoopError/Code/cancelled`` when the task was cancelled (progress saved).
    func run() async throws -> DownloadOutcome {
        // The part file is let go with the transfer, not with the last reference to it.
        defer { part?.unlock() }
        // Opening saves durably (a new record, a reset, a recovered one): on a disk thread, unless
        // there is nothing to save (`opensWithoutSaving`).
        if let done = try await openWaitingForUnclaimedWriters() {
            guard options.refresh, done.state == .completed, try await changedOnServer(done) else { return .alreadyComplete(done) }
            try await onDisk { try $0.beginRefresh() }
        }
        if announcesAdded { emit(.added(snapshot())) }
        return .downloaded(try await transferWithRetries())
    }

    /// The longest ``openWaitingForUnclaimedWriters()`` waits.
    static let unclaimedWriterWait: Duration = .seconds(60)

    /// ``open()``, again while its part file is held by another download that made it without a
    /// claim (`reopenPartFile`), for up to ``unclaimedWriterWait``: that download is refused the
    /// name at its finish, which this download's record holds, and lets the file go. (A list with a
    /// new URL for the file an unfinished download of it resumes into: the new one could make the
    /// part file first, and the unfinished one failed "in use".)
    func openWaitingForUnclaimedWriters() async throws -> Download? {
        let deadline = ContinuousClock.now + Self.unclaimedWriterWait
        while true {
            do {
                return try await (opensWithoutSaving ? open() : onDisk { try $0.open() })
            } catch let error as SwoopError where error.code == .inUse && error.isRetryable && ContinuousClock.now < deadline {
                do {
                    try await Task.sleep(for: .milliseconds(20))
                } catch {
                    // A pause or Ctrl-C while waiting ends the run as one during a transfer does.
                    throw await interrupted(by: error)
                }
            }
        }
    }

    /// Gets the download ready to transfer: saves a new record, or takes a stored one on (a
    /// completed one recognised, an unfinished one's part file reopened). Returns the snapshot of a
    /// download that is already complete.
    func open() throws -> Download? {
        try FileSystem.checkWritableDirectory(record.directory)
        if isNew {
            try storeCall { try store.save(record) }
            return nil
        }
        record.checksum = options.checksum?.description
        record.headers = options.headers.map { HTTPHeaderField(name: $0.name, value: $0.value) }
        if record.settings != options.settings {
            // Settings are the download's own, never written by a transfer's updates.
            record.settings = options.settings
            try storeCall { try store.update(settings: options.settings, id: record.id) }
        }
        // An interrupted rename is finished under the policy it was started with.
        if let done = try recogniseCompleted() { return done }
        record.collisionPolicy = options.collisionPolicy
        try returnToQueue()
        try reopenPartFile()
        return record.state == .completed ? record.snapshot() : nil
    }

    /// Runs blocking disk work (flushes, durable saves) on a ``DiskWork`` thread while this
    /// transfer's task waits: an event loop never blocks on the disk.
    func onDisk<T: Sendable>(_ body: @escaping @Sendable (Transfer) throws -> T) async throws -> T {
        let transfer = Exclusive(value: self)
        return try await DiskWork.run { try body(transfer.value) }
    }

    /// Moves the record's state through ``DownloadStateMachine``: the only way a transfer changes it.
    func transition(_ request: DownloadStateMachine.Request) throws {
        record.state = try DownloadStateMachine.next(after: record.state, on: request).get()
    }

    func snapshot() -> Download {
        var download = record.snapshot(bytesPerSecond: retrying == nil ? meter.bytesPerSecond : 0)
        if record.state != .completed { download.completedBytes = offset }
        download.retry = retrying
        return download
    }

    func storeCall<T>(_ body: () throws -> T) throws -> T {
        try withStoreErrors(body)
    }

    func classify(_ error: any Error) -> SwoopError {
        // The source the error came from: the URL, or the mirror that took its place.
        ErrorClassifier.classify(error, url: url.absoluteString, timeouts: configuration.timeouts)
    }
}
