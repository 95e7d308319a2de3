import AsyncHTTPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// Runs many downloads: a waiting queue, a limit on how many run at once (and per host), durable
/// lists, and events for every subscriber.
///
/// ```swift
/// let manager = try DownloadManager(store: try SQLiteDownloadStore(directory: stateDirectory))
/// let runner = Task { await manager.run() }
/// let id = try await manager.add(DownloadRequest(url: "https://example.com/a.iso", directory: "/tmp"))
/// for await event in manager.events() { if event.download.id == id, event.isTerminal { break } }
/// try await manager.shutdown()
/// await runner.value
/// ```
///
/// The transfers run as child tasks of ``run()``; ``shutdown()`` stops them (saving their progress),
/// waits for them, closes the store and the connection pool, and ends every event stream. No task
/// or connection outlives it. ``download(_:)`` runs one download at once in the caller's task,
/// outside the queue.
public actor DownloadManager {
    /// The configuration the manager was made with (the queue limits may change since; see ``stats()``).
    public nonisolated let configuration: Configuration
    let store: any DownloadStore
    let logger: Logger
    let client: HTTPClientPool
    let rateLimits: RateLimits
    private let hub = EventHub()
    private let live = LiveTransfers()
    private var queue: DownloadQueue
    private var phase = Phase.idle
    private let starts: AsyncStream<Download.ID>
    private let startsContinuation: AsyncStream<Download.ID>.Continuation
    private var runFinished: [CheckedContinuation<Void, Never>] = []
    /// Whether `run()` is executing (including draining its transfers after it was told to stop).
    private var runIsActive = false
    /// Callers of `shutdown()` that came while another call was shutting down.
    private var shutdownWaiters: [CheckedContinuation<Void, Never>]?
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    /// What to do with a running download once its transfer has stopped.
    private var stopIntents: [Download.ID: StopIntent] = [:]
    private var nextPosition: Int?
    private var session = SessionCounts()
    /// Callers of `stop` waiting for `runQueued` to settle a queued transfer they stopped.
    private var settleWaiters: [Download.ID: [CheckedContinuation<Void, Never>]] = [:]
    /// Downloads paused or cancelled here after the queue handed them to `run()` but before their
    /// transfer began: their event is already out, so `runQueued` must not announce them again.
    private var stoppedBeforeStart: Set<Download.ID> = []

    private enum Phase { case idle, running, stopping, stopped }

    private enum StopIntent {
        case pause
        case cancel
        case remove(deletingFile: Bool)
    }

    /// Creates a manager.
    ///
    /// - Parameters:
    ///   - configuration: Queue limits, retries, timeouts, TLS and the rest.
    ///   - store: Where records live; ``InMemoryDownloadStore`` keeps nothing on disk.
    ///   - logger: The logger the library logs to (at `info` and below).
    /// - Throws: ``SwoopError`` when the TLS configuration cannot be loaded or a proxy URL is not valid.
    public init(
        configuration: Configuration = Configuration(), store: any DownloadStore = InMemoryDownloadStore(),
        logger: Logger = Logger(label: "swoop", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws {
        guard configuration.queue.maxConcurrentDownloads >= 1 else {
            throw SwoopError(.invalidArgument, "the most downloads at once must be at least 1")
        }
        if let perHost = configuration.queue.maxPerHost, perHost < 1 {
            throw SwoopError(.invalidArgument, "the most downloads per host must be at least 1")
        }
        self.configuration = configuration
        self.store = store
        self.logger = logger
        self.rateLimits = try RateLimits(configuration.limits)
        self.client = try HTTPClientPool(configuration)
        self.queue = DownloadQueue(
            limits: .init(maxConcurrent: configuration.queue.maxConcurrentDownloads, maxPerHost: configuration.queue.maxPerHost)
        )
        (starts, startsContinuation) = AsyncStream.makeStream(of: Download.ID.self)
    }

    /// A manager that writes nothing but the downloaded files: records in memory, no lock files,
    /// no cache directory.
    public static func ephemeral(configuration: Configuration = Configuration()) throws -> DownloadManager {
        var configuration = configuration
        configuration.lockDirectory = nil
        return try DownloadManager(configuration: configuration, store: InMemoryDownloadStore())
    }

    /// A new stream of every event from now on. See ``DownloadEvent`` for what may be coalesced:
    /// progress events of one download merge while unread; nothing else is ever dropped.
    public nonisolated func events() -> DownloadEvents {
        hub.subscribe()
    }

    // MARK: - Running

    /// Runs queued downloads until ``shutdown()``: the transfers are this method's child tasks.
    /// Call it once, in a task of its own. Cancelling that task stops the transfers too (their
    /// progress is saved), like ``shutdown()`` does.
    public func run() async {
        guard phase == .idle else { return }
        phase = .running
        runIsActive = true
        schedule()
        let starts = self.starts
        await withDiscardingTaskGroup { group in
            for await id in starts {
                group.addTask { await self.runQueued(id) }
            }
            // No more starts (shutdown, or this task was cancelled): what `schedule()` would hand
            // out from now on would never run.
            if phase == .running { phase = .stopping }
            group.cancelAll()
        }
        // Ids handed to the start stream that the loop never took (it ended first) still hold
        // queue slots; they never began, so they stay `waiting` in the store.
        for id in Array(queue.active.keys) {
            queue.finished(id)
            for waiter in settleWaiters.removeValue(forKey: id) ?? [] { waiter.resume() }
        }
        runIsActive = false
        for waiter in runFinished { waiter.resume() }
        runFinished.removeAll()
        wakeIdleWaiters(force: true)
    }

    /// Whether ``run()`` is running (and not shutting down): queued downloads start only then.
    public var isRunning: Bool { phase == .running }

    /// Returns when nothing runs and nothing waits (or the manager stops).
    public func waitUntilIdle() async {
        if queue.isIdle || phase == .stopped { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    /// Downloads one file now, in the caller's task and outside the queue (or finishes a partial
    /// one, or recognises it as already complete).
    ///
    /// - Returns: How it ended, with the final snapshot.
    /// - Throws: ``SwoopError``; ``SwoopError/Code/cancelled`` when the task was cancelled (progress saved).
    public func download(_ request: DownloadRequest) async throws -> DownloadOutcome {
        guard phase == .idle || phase == .running else { throw Self.stoppedError }
        let id = Download.ID.make()
        let job = transferJob(request, id: id)
        let task = Task { try await job() }
        live.register(id, task: task)
        defer { live.unregister(id) }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    // MARK: - Adding

    /// Queues a download and returns its id.
    ///
    /// A URL already in the store for the same directory and file name is reused, never
    /// duplicated: a paused or failed one goes back to the queue and continues from its progress; a
    /// completed one is recognised (``DownloadEvent/alreadyComplete(_:)``) without a transfer.
    public func add(_ request: DownloadRequest) throws -> Download.ID {
        try add(contentsOf: [request])[0]
    }

    /// Queues many downloads in one store transaction (thousands take a fraction of a second).
    ///
    /// - Returns: The ids, one per request, in order (a request repeated in the list gets the same id).
    public func add(contentsOf requests: [DownloadRequest]) throws -> [Download.ID] {
        guard phase == .idle || phase == .running else { throw Self.stoppedError }
        var position = try nextQueuePosition()
        var byKey: [DownloadKey: DownloadRecord] = [:]
        var ids: [Download.ID] = []
        var toSave: [DownloadRecord] = []
        var entries: [DownloadQueue.Entry] = []
        let keys = requests.map(\.key)
        // One batch lookup: thousands of URLs cost one read, not one each.
        let stored = Dictionary(try store.find(keys).map { ($0.key, $0) }, uniquingKeysWith: { a, _ in a })
        for (request, key) in zip(requests, keys) {
            if let record = byKey[key] {
                ids.append(record.id)
                continue
            }
            var record: DownloadRecord
            if let existing = stored[key] {
                if queue.contains(existing.id) {
                    // Already queued or running here: its live record must not be overwritten.
                    byKey[key] = existing
                    ids.append(existing.id)
                    continue
                }
                if existing.state == .active {
                    // Another process may be running it: its row is that process's to write. The
                    // lock decides when it starts here (a dead process's download is recovered then).
                    byKey[key] = existing
                    ids.append(existing.id)
                    entries.append(Self.entry(existing))
                    continue
                }
                record = existing
                try Self.requeue(&record)
            } else {
                record = DownloadRecord(url: key.url, directory: key.directory, requestedName: key.requestedName, bootID: FileSystem.bootID)
                record.position = position
                position += 1
            }
            record.headers = request.headers.map { HTTPHeaderField(name: $0.name, value: $0.value) }
            record.checksum = request.checksum?.description
            record.collisionPolicy = request.collisionPolicy
            // A re-added download keeps the priority it was given unless this request names one.
            if stored[key] == nil || request.priority != 0 { record.priority = request.priority }
            record.updatedAt = Date()
            byKey[key] = record
            ids.append(record.id)
            toSave.append(record)
            entries.append(Self.entry(record))
        }
        try rateLimits.remember(requests, ids: ids)
        nextPosition = position
        try store.save(contentsOf: toSave)
        for record in toSave { hub.publish(.added(record.snapshot())) }
        queue.enqueue(entries)
        schedule()
        return ids
    }

    /// Puts a stored record back in line: paused and failed ones resume, a removed one starts afresh.
    private static func requeue(_ record: inout DownloadRecord) throws {
        switch record.state {
        case .paused, .failed:
            record.state = try DownloadStateMachine.next(after: record.state, on: .resume).get()
        case .removed:
            record = DownloadRecord(
                id: record.id, url: record.url, directory: record.directory, requestedName: record.requestedName,
                bootID: FileSystem.bootID, now: record.createdAt
            )
        case .waiting, .active, .completed:
            // An `active` record belongs to a live process (its lock decides at start) or to a dead
            // one (recovered at start); a completed one is checked at start.
            break
        }
    }

    // MARK: - Controlling

    /// Pauses a download: a running one stops (progress saved), a waiting one leaves the queue.
    ///
    /// - Throws: ``SwoopError/Code/notFound`` for an unknown id; ``SwoopError/Code/inUse`` when
    ///   another process runs it; ``SwoopError/Code/invalidArgument`` when its state does not allow it.
    public func pause(_ id: Download.ID) async throws {
        if live.contains(id) {
            await stop(id, intent: .pause)
            return
        }
        let record = try withDownloadLock(id) { record in
            // Under the lock, `active` can only be what a dead process left.
            record.state = try DownloadStateMachine.next(after: record.state == .active ? .waiting : record.state, on: .pause).get()
            record.bytesPerSecond = 0
            record.updatedAt = Date()
            try store.save(record)
        }
        queue.removeWaiting(id)
        session.stopped += 1
        hub.publish(.paused(record.snapshot()))
        wakeIdleWaiters()
        await waitForHandedOverStart(id)
    }

    /// Puts a paused or failed download (or one a dead process left behind) back in the queue.
    ///
    /// - Parameter headers: Request headers to store with it (replacing stored ones of the same name).
    public func resume(_ id: Download.ID, replacingHeaders headers: [(name: String, value: String)] = []) throws {
        guard !queue.contains(id) else {
            throw SwoopError(.invalidArgument, "download \(id) is already \(queue.isWaiting(id) ? "waiting" : "active")")
        }
        var record = try existingRecord(id)
        switch record.state {
        case .waiting:
            break
        case .active:
            try Self.checkNotRunningElsewhere(record, lockDirectory: configuration.lockDirectory)
            record.state = try DownloadStateMachine.next(after: .active, on: .recover).get()
        default:
            record.state = try DownloadStateMachine.next(after: record.state, on: .resume).get()
        }
        record.headers = Self.merged(record.headers, headers)
        record.updatedAt = Date()
        try store.save(record)
        queue.enqueue([Self.entry(record)])
        schedule()
    }

    /// Pauses every running and waiting download of this manager.
    public func pauseAll() async {
        // Waiting ones first: each running one that stops frees a slot the queue would fill.
        let ids = queue.waiting.map(\.id) + Array(queue.active.keys)
        for id in ids { try? await pause(id) }
    }

    /// Resumes every unfinished download in the store (paused, failed, waiting, or left active by a
    /// process that died), in queue order.
    ///
    /// - Returns: The ids queued.
    /// - Parameter headers: Request headers to store with each (replacing stored ones of the same
    ///   name), such as a fresh `Authorization`.
    /// - Returns: The ids queued.
    @discardableResult
    public func resumeAll(replacingHeaders headers: [(name: String, value: String)] = []) throws -> [Download.ID] {
        var resumed: [DownloadRecord] = []
        for var record in try store.all() where !queue.contains(record.id) {
            switch record.state {
            case .waiting, .paused, .failed:
                if record.state != .waiting { record.state = try DownloadStateMachine.next(after: record.state, on: .resume).get() }
            case .active:
                // Left by a process that died, unless one is running it (then it is not ours to resume).
                guard (try? withFreeLock(of: record, {})) != nil else { continue }
                record.state = try DownloadStateMachine.next(after: .active, on: .recover).get()
            case .completed, .removed:
                continue
            }
            record.headers = Self.merged(record.headers, headers)
            record.updatedAt = Date()
            resumed.append(record)
        }
        // One transaction for all: resuming thousands costs one fsync, not one each.
        try store.save(contentsOf: resumed)
        queue.enqueue(resumed.map(Self.entry))
        schedule()
        return resumed.map(\.id)
    }

    /// `stored` with each of `new` replacing the headers of the same name.
    private static func merged(_ stored: [HTTPHeaderField], _ new: [(name: String, value: String)]) -> [HTTPHeaderField] {
        var result = stored
        for header in new {
            result.removeAll { $0.name.lowercased() == header.name.lowercased() }
            result.append(HTTPHeaderField(name: header.name, value: header.value))
        }
        return result
    }

    /// Stops a download for good: the part file is deleted and the record is kept as `removed`
    /// (a completed file stays where it is).
    public func cancel(_ id: Download.ID) async throws {
        if live.contains(id) {
            await stop(id, intent: .cancel)
            return
        }
        _ = try withDownloadLock(id) { record in try markCancelled(&record) }
        queue.removeWaiting(id)
        await waitForHandedOverStart(id)
    }

    /// When the queue already handed `id` to `run()` (its transfer not begun), waits until
    /// `runQueued` has found it stopped and freed its slot, so a `resume` right after works.
    private func waitForHandedOverStart(_ id: Download.ID) async {
        guard queue.active[id] != nil else { return }
        stoppedBeforeStart.insert(id)
        await withCheckedContinuation { settleWaiters[id, default: []].append($0) }
    }

    /// Forgets a download: stops it if running and deletes its record; with `deletingFile`, also its
    /// part file and its final file (a final file changed since Swoop wrote it is kept).
    public func remove(_ id: Download.ID, deletingFile: Bool = false) async throws {
        if live.contains(id) {
            await stop(id, intent: .remove(deletingFile: deletingFile))
            return
        }
        _ = try withDownloadLock(id) { record in try delete(record, deletingFile: deletingFile) }
        queue.removeWaiting(id)
        await waitForHandedOverStart(id)
    }

    /// Runs `body` on the download's freshly read record while holding its cross-process lock, so
    /// that no process starts it meanwhile (a transfer takes the lock, then reads the record).
    ///
    /// - Throws: ``SwoopError/Code/inUse`` naming the pid when another process is transferring it;
    ///   ``SwoopError/Code/notFound`` for an unknown id.
    private func withDownloadLock(_ id: Download.ID, _ body: (inout DownloadRecord) throws -> Void) throws -> DownloadRecord {
        let first = try existingRecord(id)
        let lock = try configuration.lockDirectory.map { directory in
            try ProcessLock.acquire(key: Transfer.lockKey(for: first), in: directory, what: first.url)
        }
        defer { withExtendedLifetime(lock) {} }
        var record = try existingRecord(id)
        try body(&record)
        return record
    }

    /// Moves a waiting download to `position` in the waiting order (0 is next).
    public func move(_ id: Download.ID, to position: Int) throws {
        guard let changed = queue.move(id, to: position, firstPosition: queue.waiting.map(\.position).min() ?? 0) else {
            throw SwoopError(.invalidArgument, "download \(id) is not waiting in this manager's queue")
        }
        try saveQueueEntries(changed)
    }

    /// Changes a waiting download's priority (higher starts first).
    public func setPriority(_ id: Download.ID, _ priority: Int) throws {
        guard let changed = queue.setPriority(id, priority) else {
            throw SwoopError(.invalidArgument, "download \(id) is not waiting in this manager's queue")
        }
        try saveQueueEntries([changed])
    }

    /// Changes how many downloads run at once. Lowering it lets running downloads finish; it does
    /// not stop them.
    public func setMaxConcurrentDownloads(_ limit: Int) throws {
        guard limit >= 1 else { throw SwoopError(.invalidArgument, "the most downloads at once must be at least 1") }
        queue.limits.maxConcurrent = limit
        schedule()
    }

    /// Changes the per-host limit (`nil` for none).
    public func setMaxPerHost(_ limit: Int?) throws {
        if let limit, limit < 1 { throw SwoopError(.invalidArgument, "the most downloads per host must be at least 1") }
        queue.limits.maxPerHost = limit
        schedule()
    }

    // MARK: - Reading

    /// Snapshots of the downloads in the store, in queue order, with live speeds for running ones.
    ///
    /// - Parameter states: Only these states, or `nil` for all.
    public func downloads(matching states: Set<Download.State>? = nil) throws -> [Download] {
        let current = live.snapshots()
        return try store.all().compactMap { record in
            let snapshot = current[record.id] ?? record.snapshot(bytesPerSecond: record.state == .active ? record.bytesPerSecond : 0)
            return states.map { $0.contains(snapshot.state) } ?? true ? snapshot : nil
        }
    }

    /// One download's snapshot.
    public func download(id: Download.ID) throws -> Download {
        if let snapshot = live.snapshots()[id] { return snapshot }
        return try existingRecord(id).snapshot()
    }

    /// Counts and total speed of this manager's downloads.
    public func stats() -> DownloadStats {
        let snapshots = live.snapshots()
        let running = queue.active.keys
        return DownloadStats(
            active: running.count, waiting: queue.waiting.count, completed: session.completed, failed: session.failed,
            stopped: session.stopped,
            bytesPerSecond: running.reduce(0) { $0 + (snapshots[$1]?.bytesPerSecond ?? 0) },
            maxConcurrentDownloads: queue.limits.maxConcurrent
        )
    }

    // MARK: - Reconciling

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
            case .active where !queue.contains(record.id) && !live.contains(record.id):
                guard (try? withFreeLock(of: record, {})) != nil else { continue }
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
                guard !queue.contains(record.id), !live.contains(record.id),
                    let checked = try withFreeLock(of: record, { try checkCompleted(record.id) }), let outcome = checked
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

    private func applyRetention(_ records: [DownloadRecord]) throws -> Int {
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

    /// `*.swoop` files in the directories the store knows that no unfinished record owns.
    static func orphanedPartFiles(_ records: [DownloadRecord]) -> [String] {
        let owned = Set(records.filter { $0.state != .completed && $0.state != .removed }.compactMap(\.partPath))
        var orphans: [String] = []
        for directory in Set(records.map(\.directory)).sorted() {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for name in names.sorted() where name.hasSuffix(FileNaming.partSuffix) {
                let path = (directory as NSString).appendingPathComponent(name)
                if !owned.contains(path) { orphans.append(path) }
            }
        }
        return orphans
    }

    // MARK: - Shutting down

    /// Stops every transfer (saving its progress as paused), waits for them, closes the store and
    /// the connection pool, and ends every event stream. Waiting downloads stay `waiting` in the
    /// store. Safe to call more than once.
    public func shutdown() async throws {
        guard phase != .stopped else { return }
        if shutdownWaiters != nil {
            // Another call is shutting down: return when it is done, not before.
            await withCheckedContinuation { shutdownWaiters?.append($0) }
            return
        }
        shutdownWaiters = []
        phase = .stopping
        startsContinuation.finish()
        live.cancelAll()
        if runIsActive {
            await withCheckedContinuation { runFinished.append($0) }
        }
        await live.waitForAll()
        // The renames of finished downloads, made durable once per directory (see `Transfer.finish`).
        _ = try? await DiskWork.run { FileSystem.syncDirectories() }
        phase = .stopped
        wakeIdleWaiters(force: true)
        hub.finish()
        var failure: (any Error)?
        do { try store.close() } catch { failure = error }
        do { try await client.shutdown() } catch { failure = failure ?? error }
        for waiter in shutdownWaiters ?? [] { waiter.resume() }
        shutdownWaiters = []
        if let failure { throw failure }
    }

    // MARK: - Internals

    private static let stoppedError = SwoopError(.invalidArgument, "the download manager is shut down")

    private func schedule() {
        guard phase == .running else { return }
        for entry in queue.nextStarts() {
            startsContinuation.yield(entry.id)
        }
        wakeIdleWaiters()
    }

    private func wakeIdleWaiters(force: Bool = false) {
        guard force || queue.isIdle, !idleWaiters.isEmpty else { return }
        let waiters = idleWaiters
        idleWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    /// Runs one download the queue started; a child task of ``run()``.
    private func runQueued(_ id: Download.ID) async {
        defer {
            queue.finished(id)
            stoppedBeforeStart.remove(id)
            for waiter in settleWaiters.removeValue(forKey: id) ?? [] { waiter.resume() }
            schedule()
        }
        let record: DownloadRecord
        do {
            guard let found = try store.record(id: id) else {
                // Removed by another process while it waited.
                if !stoppedBeforeStart.contains(id) {
                    session.stopped += 1
                    hub.publish(.removed(Download(id: id, url: "", destination: nil, state: .removed, totalBytes: nil, completedBytes: 0)))
                }
                return
            }
            record = found
        } catch {
            return publishFailure(id: id, record: nil, error: error)
        }
        guard record.state == .waiting || record.state == .active || record.state == .completed else {
            // Paused or removed by another process (`swoop pause`) while it waited, or here just now.
            if !stoppedBeforeStart.contains(id) {
                session.stopped += 1
                hub.publish(record.state == .removed ? .removed(record.snapshot()) : .paused(record.snapshot()))
            }
            return
        }
        let request: DownloadRequest
        do {
            request = try record.request()
        } catch {
            return publishFailure(id: id, record: record, error: error)
        }
        // A shutdown that began meanwhile must not find a transfer it did not cancel.
        guard phase == .running else { return }
        // The manager announced it when it was added: the transfer's own `added` would be a second one.
        let job = transferJob(request, id: id, queued: true)
        // Known to be live before the task can emit anything, so its terminal event is seen.
        live.reserve(id)
        let task = Task { try await job() }
        live.register(id, task: task)
        let result = await withTaskCancellationHandler {
            await task.result
        } onCancel: {
            task.cancel()
        }
        let terminalSent = live.unregister(id)
        await settle(id, record: record, result: result, terminalSent: terminalSent)
    }

    /// After a transfer ended: counts it, carries out a pending cancel or remove, and makes sure
    /// subscribers hear how it ended.
    private func settle(
        _ id: Download.ID, record: DownloadRecord, result: Result<DownloadOutcome, any Error>, terminalSent: Bool
    ) async {
        let intent = stopIntents.removeValue(forKey: id)
        switch intent {
        case .cancel?:
            // A cancel that came as the download completed is too late: it stays completed.
            if case .failure = result, var current = try? store.record(id: id) {
                try? markCancelled(&current)
            } else if case .success(let outcome) = result {
                session.completed += 1
                if case .alreadyComplete(let download) = outcome { hub.publish(.alreadyComplete(download)) }
            }
            return
        case .remove(let deletingFile)?:
            if let current = try? store.record(id: id) {
                try? delete(current, deletingFile: deletingFile)
            }
            return
        case .pause?, nil:
            break
        }
        switch result {
        case .success(.alreadyComplete(let download)):
            session.completed += 1
            hub.publish(.alreadyComplete(download))
        case .success(.downloaded):
            session.completed += 1
        case .failure(let error):
            let swoopError = error as? SwoopError ?? SwoopError(.other, "\(error)", cause: error)
            if swoopError.code == .cancelled {
                session.stopped += 1
                // Stopped before it could say so itself (another process paused or removed it).
                guard !terminalSent else { return }
                let current = try? store.record(id: id)
                if let current, current.state != .removed {
                    hub.publish(.paused(current.snapshot()))
                } else {
                    var gone = current?.snapshot() ?? record.snapshot()
                    gone.state = .removed
                    hub.publish(.removed(gone))
                }
                return
            }
            session.failed += 1
            if !terminalSent { publishFailure(id: id, record: record, error: swoopError, count: false) }
        }
    }

    /// Reports a download that failed before its transfer could record it. An `inUse` failure
    /// leaves the record alone: it belongs to the process that holds the lock.
    private func publishFailure(id: Download.ID, record: DownloadRecord?, error: any Error, count: Bool = true) {
        let swoopError = error as? SwoopError ?? SwoopError(.store, "\(error)", cause: error)
        if count { session.failed += 1 }
        var snapshot = record?.snapshot() ?? Download(id: id, url: "", destination: nil, state: .failed, totalBytes: nil, completedBytes: 0)
        if var record, swoopError.code != .inUse, record.state != .completed {
            record.state = .failed
            record.lastError = swoopError.message
            record.bytesPerSecond = 0
            record.updatedAt = Date()
            try? store.save(record)
            snapshot = record.snapshot()
        }
        snapshot.error = swoopError.message
        hub.publish(.failed(snapshot, swoopError))
    }

    /// Stops a running transfer and waits for it; what happens next is `intent`.
    private func stop(_ id: Download.ID, intent: StopIntent) async {
        stopIntents[id] = intent
        if case .pause = intent {} else { live.suppressPausedEvent(id) }
        await live.cancelAndWait(id)
        if queue.active[id] != nil {
            // The task has ended, but `runQueued` settles it (cancel/remove, counts, the queue slot)
            // in its own turn on the actor, which may come after this one: wait for it, so that
            // the caller sees the outcome (no part file after `cancel`, `resume` allowed after `pause`).
            await withCheckedContinuation { settleWaiters[id, default: []].append($0) }
            return
        }
        // `runQueued` settles it (cancel/remove) once the task's result is in.
        if queue.active[id] == nil, let pending = stopIntents.removeValue(forKey: id) {
            // A direct `download(_:)` has no queue entry: settle here.
            switch pending {
            case .pause: break
            case .cancel: if var record = try? store.record(id: id) { try? markCancelled(&record) }
            case .remove(let deletingFile): if let record = try? store.record(id: id) { try? delete(record, deletingFile: deletingFile) }
            }
        }
    }

    private func markCancelled(_ record: inout DownloadRecord) throws {
        if record.state != .completed, let part = record.partPath {
            unlink(part)
        }
        record.state = try DownloadStateMachine.next(after: record.state, on: .remove).get()
        record.bytesPerSecond = 0
        record.updatedAt = Date()
        try store.save(record)
        session.stopped += 1
        hub.publish(.removed(record.snapshot()))
        wakeIdleWaiters()
    }

    private func delete(_ record: DownloadRecord, deletingFile: Bool) throws {
        if deletingFile {
            if let part = record.partPath { unlink(part) }
            if record.state == .completed, let path = record.destinationPath {
                if record.isCompletedFile(at: path) {
                    unlink(path)
                } else if FileSystem.exists(path) {
                    hub.publish(.notice(record.snapshot(), "\(path) was changed since it was downloaded; kept it"))
                }
            }
        }
        try store.delete(id: record.id)
        var snapshot = record.snapshot()
        snapshot.state = .removed
        session.stopped += 1
        hub.publish(.removed(snapshot))
        wakeIdleWaiters()
    }

    private func existingRecord(_ id: Download.ID) throws -> DownloadRecord {
        guard let record = try store.record(id: id) else {
            throw SwoopError(.notFound, "no download with id \(id)")
        }
        return record
    }

    /// Throws ``SwoopError/Code/inUse`` when another process holds the download's lock.
    /// Runs `body` holding the download's lock, or returns `nil` when another process holds it.
    private func withFreeLock<T>(of record: DownloadRecord, _ body: () throws -> T) throws -> T? {
        guard let directory = configuration.lockDirectory else { return try body() }
        let lock: ProcessLock
        do {
            lock = try ProcessLock.acquire(key: Transfer.lockKey(for: record), in: directory, what: record.url)
        } catch let error as SwoopError where error.code == .inUse {
            return nil
        }
        return try withExtendedLifetime(lock) { try body() }
    }

    /// Checks a completed download whose file is not as recorded, under its lock and from a fresh
    /// read: renames its part file if its process stopped before the rename, then records whether
    /// the file is gone or changed (in its error).
    private func checkCompleted(_ id: Download.ID) throws -> (published: Bool, problem: Bool)? {
        guard var record = try store.record(id: id), record.state == .completed, let path = record.destinationPath else {
            return nil
        }
        let published = (try? Transfer.finishInterruptedPublish(of: record)) == true
        let problem = record.isCompletedFile(at: path)
            ? nil : FileSystem.exists(path) ? "\(path) was changed since it was downloaded" : "\(path) was removed"
        if problem != record.lastError {
            record.lastError = problem
            try store.update(record, durable: true)
        }
        return (published, problem != nil)
    }

    static func checkNotRunningElsewhere(_ record: DownloadRecord, lockDirectory: String?) throws {
        guard let lockDirectory else { return }
        _ = try ProcessLock.acquire(key: Transfer.lockKey(for: record), in: lockDirectory, what: record.url)
    }

    private func saveQueueEntries(_ entries: [DownloadQueue.Entry]) throws {
        var records: [DownloadRecord] = []
        for entry in entries {
            guard var record = try store.record(id: entry.id) else { continue }
            record.priority = entry.priority
            record.position = entry.position
            records.append(record)
        }
        try store.save(contentsOf: records)
    }

    private func nextQueuePosition() throws -> Int {
        if let nextPosition { return nextPosition }
        let position = (try store.all().map(\.position).max() ?? -1) + 1
        nextPosition = position
        return position
    }

    private static func entry(_ record: DownloadRecord) -> DownloadQueue.Entry {
        DownloadQueue.Entry(id: record.id, host: hostKey(record.url), priority: record.priority, position: record.position)
    }

    /// The lower-cased host of a URL, without parsing through ICU.
    static func hostKey(_ url: String) -> String {
        guard let components = URLComponents(string: url), let range = components.rangeOfHost else { return url }
        return url[range].lowercased()
    }

    /// The work of one transfer, as a closure a task can run.
    ///
    /// - Parameter queued: Started by the queue: the manager announced it when it was added (the
    ///   transfer's own `added` would be a second one), and a record another process paused or
    ///   removed is left alone.
    private nonisolated func transferJob(
        _ request: DownloadRequest, id: Download.ID, queued: Bool = false
    ) -> @Sendable () async throws -> DownloadOutcome {
        let (hub, live, client, configuration, store, logger) = (hub, live, client, configuration, store, logger)
        let rateLimits = rateLimits
        return {
            let throttle = try rateLimits.start(id, requested: request.bytesPerSecond)
            defer { rateLimits.finish(id) }
            let transfer = Transfer(
                request: request, client: client, configuration: configuration, store: store, logger: logger, queued: queued,
                throttle: throttle,
                emit: { event in
                    if queued, case .added = event { return }
                    guard live.note(event) else { return }
                    hub.publish(event)
                }
            )
            // On an event loop of the HTTP client: see `EventLoopExecutor`.
            return try await withTaskExecutorPreference(EventLoopExecutor.next()) {
                try await transfer.run()
            }
        }
    }
}

/// Counts and speed for a status line.
public struct DownloadStats: Sendable, Hashable, Codable {
    /// Transferring now.
    public var active: Int
    /// In this manager's queue, not started.
    public var waiting: Int
    /// Finished in this manager's life: completed (or already complete), failed, and otherwise
    /// stopped (paused, cancelled, removed).
    public var completed: Int
    public var failed: Int
    public var stopped: Int
    /// The sum of the running downloads' speeds.
    public var bytesPerSecond: Double
    /// The current limit on downloads at once.
    public var maxConcurrentDownloads: Int
}

/// What ``DownloadManager/reconcile()`` found and did.
public struct ReconciliationReport: Sendable, Hashable {
    /// Downloads a dead process left active, now waiting again.
    public var recovered: [Download.ID] = []
    /// Completed downloads whose part file a stopped process had not yet renamed; renamed now.
    public var published: [Download.ID] = []
    /// Completed downloads whose file is gone or changed (marked in their error).
    public var changedFiles: [Download.ID] = []
    /// Part files no download record owns; left in place.
    public var orphanedPartFiles: [String] = []
    /// Finished records forgotten under the history limits.
    public var forgotten = 0
}

private struct SessionCounts {
    var completed = 0
    var failed = 0
    var stopped = 0
}

/// The running transfers' tasks and latest snapshots, shared with the transfers' event callbacks
/// (which run outside the actor).
final class LiveTransfers: Sendable {
    private struct Entry {
        var task: Task<DownloadOutcome, any Error>?
        var snapshot: Download?
        var terminalSent = false
        var suppressPaused = false
    }

    private let entries = NIOLockedValueBox<[Download.ID: Entry]>([:])

    /// Marks a transfer live before its task exists (its events count from the first one).
    func reserve(_ id: Download.ID) {
        entries.withLockedValue { $0[id] = Entry(task: nil) }
    }

    func register(_ id: Download.ID, task: Task<DownloadOutcome, any Error>) {
        entries.withLockedValue { entries in
            if entries[id] == nil { entries[id] = Entry(task: task) } else { entries[id]?.task = task }
        }
    }

    /// Forgets a transfer; returns whether it published a terminal event.
    @discardableResult
    func unregister(_ id: Download.ID) -> Bool {
        entries.withLockedValue { $0.removeValue(forKey: id)?.terminalSent ?? false }
    }

    func contains(_ id: Download.ID) -> Bool {
        entries.withLockedValue { $0[id] != nil }
    }

    /// Records an event's snapshot; returns whether to publish it.
    func note(_ event: DownloadEvent) -> Bool {
        entries.withLockedValue { entries in
            let id = event.download.id
            guard entries[id] != nil else { return true }
            entries[id]?.snapshot = event.isTerminal ? nil : event.download
            if event.isTerminal {
                if case .paused = event, entries[id]?.suppressPaused == true { return false }
                entries[id]?.terminalSent = true
            }
            return true
        }
    }

    func suppressPausedEvent(_ id: Download.ID) {
        entries.withLockedValue { $0[id]?.suppressPaused = true }
    }

    func snapshots() -> [Download.ID: Download] {
        entries.withLockedValue { entries in
            entries.compactMapValues(\.snapshot)
        }
    }

    func cancelAndWait(_ id: Download.ID) async {
        guard let task = entries.withLockedValue({ $0[id]?.task }) else { return }
        task.cancel()
        _ = await task.result
    }

    func cancelAll() {
        for task in entries.withLockedValue({ $0.values.compactMap(\.task) }) { task.cancel() }
    }

    func waitForAll() async {
        for task in entries.withLockedValue({ $0.values.compactMap(\.task) }) { _ = await task.result }
    }
}

/// Builds the HTTPClient the way file downloads need it.
enum HTTPClientFactory {
    /// - Parameter readSize: The socket read size; `configuration.receiveBufferSize` by default.
    static func make(
        _ configuration: Configuration, proxy: HTTPClient.Configuration.Proxy? = nil, readSize: Int? = nil
    ) throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        if configuration.tls.insecure {
            tls.certificateVerification = .none
        }
        if let ca = configuration.tls.caCertificatePath {
            guard FileManager.default.isReadableFile(atPath: ca) else {
                throw SwoopError(.invalidArgument, "cannot read CA certificate file \(ca)")
            }
            tls.additionalTrustRoots = [.file(ca)]
        }
        var config = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            timeout: .init(connect: TimeAmount(configuration.timeouts.connect), read: TimeAmount(configuration.timeouts.idle)),
            decompression: .disabled
        )
        config.httpVersion = configuration.allowHTTP2 ? .automatic : .http1Only
        config.proxy = proxy
        // A TLS failure would otherwise be retried silently until the connect timeout.
        config.connectionPool.retryConnectionEstablishment = false
        // One connection per running download from a host, with room for the queue's per-host limit.
        config.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(
            8, configuration.queue.maxPerHost ?? configuration.queue.maxConcurrentDownloads
        )
        let readSize = readSize ?? configuration.receiveBufferSize
        config.http1_1ConnectionDebugInitializer = { channel in
            channel.setOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: readSize))
        }
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: config)
    }
}
