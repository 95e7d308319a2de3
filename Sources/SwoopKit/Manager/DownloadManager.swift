import AsyncHTTPClient
import Foundation
import Logging

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
    nonisolated let rateLimits: RateLimits
    let hub = EventHub()
    /// Every run between its hand-over (or direct start) and its settlement.
    nonisolated let runs = DownloadRuns()
    /// This manager's marks of slow-starting downloads as `active`.
    nonisolated let activeMarks: ActiveMarks
    /// The directories this manager renamed finished files into, flushed at shutdown.
    nonisolated let directorySyncs = DirectorySyncs()
    /// Flushes, records and renames the downloads that finish together, as a group.
    nonisolated let finishes: FinishGroups
    var queue: DownloadQueue
    /// The key of each download in the queue: a queued run takes the download's lock by it before
    /// it reads the record (once).
    var queuedKeys: [Download.ID: DownloadKey] = [:]
    /// The queued downloads whose locks another process held at their turn: out of the queue until
    /// their next (``waitForHolder(_:key:busy:)``).
    var heldElsewhere: [Download.ID: HeldDownload] = [:]
    /// Downloads paused only to change their sources (``changeURL(_:to:trustMirrorLength:)``,
    /// ``setMirrors(_:_:)``) and resumed right after: their pause is no stop (``staysPaused(_:)``).
    /// (A count: two changes may overlap.)
    var restarting: [Download.ID: Int] = [:]
    var phase = Phase.idle
    let starts: AsyncStream<Download.ID>
    let startsContinuation: AsyncStream<Download.ID>.Continuation
    var runFinished: [CheckedContinuation<Void, Never>] = []
    /// Callers of `shutdown()` that came while another call was shutting down.
    var shutdownWaiters: [CheckedContinuation<Void, Never>]?
    var idleWaiters: [CheckedContinuation<Void, Never>] = []
    /// Callers of `waitUntilRunning()` that came before `run()`.
    var runningWaiters: [CheckedContinuation<Void, Never>] = []
    var nextPosition: Int?
    var session = SessionCounts()
    /// Callers waiting for a run they stopped to settle.
    var settleWaiters: [Download.ID: [CheckedContinuation<Void, Never>]] = [:]
    /// Completed downloads added with ``DownloadRequest/refresh``: their next run checks them.
    var refreshes: Set<Download.ID> = []

    /// The manager's own life: `run()` moves idle → running → draining (its transfers stop) →
    /// stopping; `shutdown()` ends in stopped.
    enum Phase {
        case idle
        case running
        /// `run()` is stopping its transfers; no new one starts.
        case draining
        /// `run()` has returned (or never ran) and the manager is shutting down or shut down.
        case stopping
        case stopped
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
        self.finishes = FinishGroups(store: store)
        self.activeMarks = ActiveMarks(store: store)
        self.logger = logger
        self.rateLimits = try RateLimits(configuration.limits)
        self.client = try HTTPClientPool(configuration)
        self.queue = DownloadQueue(
            limits: .init(
                maxConcurrent: configuration.queue.maxConcurrentDownloads, maxPerHost: configuration.queue.maxPerHost,
                descriptors: DescriptorLimit.current
            )
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

    /// A new stream of the events from now on that `included` accepts; the others are never
    /// buffered for it. A reader that wants only some events (the terminal ones, say) of a queue
    /// of thousands keeps no copy of the rest while it is busy.
    ///
    /// - Parameter included: Decides for each event as it is published, on the publishing thread
    ///   (several at once): it must be quick and must not block.
    public nonisolated func events(
        where included: @escaping @Sendable (DownloadEvent) -> Bool
    ) -> DownloadEvents {
        hub.subscribe(where: included)
    }

    // MARK: - Running

    /// Runs queued downloads until ``shutdown()``: the transfers are this method's child tasks.
    /// Call it once, in a task of its own. Cancelling that task stops the transfers too (their
    /// progress is saved), like ``shutdown()`` does.
    public func run() async {
        guard phase == .idle else { return }
        phase = .running
        wakeRunningWaiters()
        schedule()
        let starts = self.starts
        await withDiscardingTaskGroup { group in
            // Pause, remove and limit requests from other processes, for the downloads run here.
            group.addTask { await self.watchControls() }
            for await id in starts {
                group.addTask { await self.runInTurn(id) }
            }
            // No more starts (shutdown, or this task was cancelled): what `schedule()` would hand
            // out from now on would never run.
            phase = .draining
            group.cancelAll()
        }
        // Ids handed to the start stream that the loop never took (it ended first) still hold
        // queue slots; they never began, so they stay `waiting` in the store.
        for id in Array(queue.active.keys) {
            queue.finished(id)
            runs.forget(id)
            settled(id)
        }
        phase = .stopping
        for waiter in runFinished { waiter.resume() }
        runFinished.removeAll()
        wakeIdleWaiters(force: true)
    }

    /// Whether ``run()`` is running (and not shutting down): queued downloads start only then.
    public var isRunning: Bool { phase == .running }

    /// Returns once ``run()`` has started the queue (or the manager is shutting down).
    public func waitUntilRunning() async {
        guard phase == .idle else { return }
        await withCheckedContinuation { runningWaiters.append($0) }
    }

    private func wakeRunningWaiters() {
        let waiters = runningWaiters
        runningWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    /// Returns when nothing runs and nothing waits, in the queue or for another process (or the
    /// manager stops).
    public func waitUntilIdle() async {
        if isIdle || phase == .stopped { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    // MARK: - Shutting down

    /// Stops every transfer (saving its progress as ``Download/State/interrupted``), waits for them, closes the store and
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
        let runIsActive = phase == .running || phase == .draining
        phase = runIsActive ? .draining : .stopping
        wakeRunningWaiters()
        startsContinuation.finish()
        runs.cancelAll()
        if runIsActive {
            await withCheckedContinuation { runFinished.append($0) }
        }
        await runs.waitForAll()
        // The renames of finished downloads, made durable once per directory (see `Transfer.finish`).
        let directorySyncs = self.directorySyncs
        _ = try? await DiskWork.run { directorySyncs.syncAll() }
        phase = .stopped
        wakeIdleWaiters(force: true)
        hub.finish()
        // The store closes (a checkpoint of its log into the database: disk work) while the
        // connections close.
        let store = self.store
        async let closed: Void = DiskWork.run { try store.close() }
        var failure: (any Error)?
        do { try await client.shutdown() } catch { failure = error }
        do { try await closed } catch { failure = error }
        for waiter in shutdownWaiters ?? [] { waiter.resume() }
        shutdownWaiters = []
        if let failure { throw failure }
    }
}
