import NIOConcurrencyHelpers
import ServiceLifecycle

/// A ``DownloadManager``'s life as a swift-service-lifecycle `Service`: it reconciles the store with
/// the disk, runs the queue, and on graceful shutdown (SIGINT or SIGTERM in a `ServiceGroup`, or
/// `triggerGracefulShutdown()`) stops the transfers, saves their progress and shuts the manager
/// down. `swoop get` runs one in a `ServiceGroup`; a daemon adds it to its own group beside its server.
///
/// ```swift
/// let service = DownloadService(manager: manager)
/// let group = ServiceGroup(configuration: .init(services: [service], gracefulShutdownSignals: [.sigterm], logger: logger))
/// async let running: Void = group.run()
/// let report = try await service.reconciled()   // the queue runs from here on
/// _ = try await manager.add(request)
/// ```
public struct DownloadService: Service, CustomStringConvertible {
    /// The manager this service runs.
    public let manager: DownloadManager
    private let start = StartSignal()

    /// A service for `manager`, which it reconciles, runs and shuts down.
    public init(manager: DownloadManager) {
        self.manager = manager
    }

    /// Reconciles, then runs the queue until a graceful shutdown (or cancellation), then shuts the
    /// manager down: transfers stopped with their progress saved, the store and connections closed.
    ///
    /// - Throws: The error of reconciling or of shutting down.
    public func run() async throws {
        let report: ReconciliationReport
        do {
            report = try await manager.reconcile()
        } catch {
            start.finish(.failure(error))
            try? await manager.shutdown()
            throw error
        }
        let manager = self.manager
        await withGracefulShutdownHandler {
            // Starts the queue; returns once a shutdown (or the cancellation of this task) stopped it.
            await withDiscardingTaskGroup { group in
                group.addTask { await manager.run() }
                // The queue runs once `run()` has begun: wait for it before saying so.
                await manager.waitUntilRunning()
                start.finish(.success(report))
            }
        } onGracefulShutdown: {
            Task { try? await manager.shutdown() }
        }
        start.finish(.failure(SwoopError(.cancelled, "the download service stopped before it started")))
        try await manager.shutdown()
    }

    /// "DownloadService": a `ServiceGroup` names each service by `"\(service)"`, and the default
    /// description reflects over the manager and its parts (14 protocol lookups at start-up, each a
    /// scan of the binary's 10,000 conformance records).
    public var description: String { "DownloadService" }

    /// Returns once the service has reconciled the store and its queue runs, with what reconciling
    /// found (a caller adds its downloads after this).
    ///
    /// - Throws: The error that stopped the service from starting.
    public func reconciled() async throws -> ReconciliationReport {
        try await start.wait()
    }
}

/// A one-shot result that any number of callers wait for.
private final class StartSignal: Sendable {
    private struct State {
        var result: Result<ReconciliationReport, any Error>?
        var waiters: [CheckedContinuation<ReconciliationReport, any Error>] = []
    }

    private let state = NIOLockedValueBox(State())

    /// Sets the result once (later calls are ignored) and wakes the waiters.
    func finish(_ result: Result<ReconciliationReport, any Error>) {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<ReconciliationReport, any Error>] in
            guard state.result == nil else { return [] }
            state.result = result
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    func wait() async throws -> ReconciliationReport {
        try await withCheckedThrowingContinuation { continuation in
            let result = state.withLockedValue { state -> Result<ReconciliationReport, any Error>? in
                if state.result == nil { state.waiters.append(continuation) }
                return state.result
            }
            if let result { continuation.resume(with: result) }
        }
    }
}
