import AsyncHTTPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// Runs downloads and tells subscribers what happens to them.
///
/// One manager owns one HTTP client (a connection pool) for its life; call ``shutdown()`` when done.
/// ``download(_:)`` runs a download in the caller's task: cancelling that task stops the download
/// and saves its progress.
public actor DownloadManager {
    /// The configuration the manager was made with.
    public nonisolated let configuration: Configuration
    private let store: any DownloadStore
    let logger: Logger
    let client: HTTPClient
    private let hub = EventHub()
    private var isShutDown = false

    /// Creates a manager.
    ///
    /// - Parameters:
    ///   - configuration: Retries, timeouts, TLS and the rest.
    ///   - store: Where records live; ``InMemoryDownloadStore`` keeps nothing on disk.
    ///   - logger: The logger the library logs to (at `info` and below).
    /// - Throws: ``SwoopError`` when the TLS configuration cannot be loaded.
    public init(
        configuration: Configuration = Configuration(), store: any DownloadStore = InMemoryDownloadStore(),
        logger: Logger = Logger(label: "swoop", factory: { _ in SwiftLogNoOpLogHandler() })
    ) throws {
        self.configuration = configuration
        self.store = store
        self.logger = logger
        self.client = try HTTPClientFactory.make(configuration)
    }

    /// A new stream of every event from now on. Nothing is dropped and the stream buffers without
    /// limit: keep reading it (or drop it) while downloads run.
    public nonisolated func events() -> AsyncStream<DownloadEvent> {
        hub.subscribe()
    }

    /// Downloads one file (or finishes a partial one, or recognises it as already complete).
    ///
    /// - Returns: How it ended, with the final snapshot.
    /// - Throws: ``SwoopError``; ``SwoopError/Code/cancelled`` when the task was cancelled (progress saved).
    public func download(_ request: DownloadRequest) async throws -> DownloadOutcome {
        guard !isShutDown else { throw SwoopError(.invalidArgument, "the download manager is shut down") }
        let hub = self.hub
        let transfer = Transfer(
            request: request, client: client, configuration: configuration, store: store, logger: logger,
            emit: { event in hub.publish(event) }
        )
        return try await transfer.run()
    }

    /// Snapshots of every download in the store, oldest first.
    public func downloads() throws -> [Download] {
        try store.all().map { $0.snapshot() }
    }

    /// Closes the connection pool and ends every event stream. Call it once, after the last download.
    public func shutdown() async throws {
        guard !isShutDown else { return }
        isShutDown = true
        hub.finish()
        try await client.shutdown()
    }
}

/// Fans events out to subscribers: one unbounded `AsyncStream` each, so no event is ever lost.
/// (Coalescing progress for slow subscribers comes with the manager's queue.)
final class EventHub: Sendable {
    private let continuations = NIOLockedValueBox<[UUID: AsyncStream<DownloadEvent>.Continuation]>([:])

    func subscribe() -> AsyncStream<DownloadEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: DownloadEvent.self, bufferingPolicy: .unbounded)
        let id = UUID()
        continuation.onTermination = { [continuations] _ in
            _ = continuations.withLockedValue { $0.removeValue(forKey: id) }
        }
        continuations.withLockedValue { $0[id] = continuation }
        return stream
    }

    func publish(_ event: DownloadEvent) {
        for continuation in continuations.withLockedValue({ Array($0.values) }) {
            continuation.yield(event)
        }
    }

    func finish() {
        let all = continuations.withLockedValue { all in
            defer { all.removeAll() }
            return Array(all.values)
        }
        for continuation in all { continuation.finish() }
    }
}

/// Builds the HTTPClient the way file downloads need it.
enum HTTPClientFactory {
    static func make(_ configuration: Configuration) throws -> HTTPClient {
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
        config.httpVersion = .http1Only
        // A TLS failure would otherwise be retried silently until the connect timeout.
        config.connectionPool.retryConnectionEstablishment = false
        let readSize = configuration.receiveBufferSize
        config.http1_1ConnectionDebugInitializer = { channel in
            channel.setOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: readSize))
        }
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: config)
    }
}
