import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// An in-process HTTP/1.1 server for tests, scripted per path and able to inject faults.
///
/// Modelled on AsyncHTTPClient's `HTTPBin`. Serve ``Resource``s at paths, then script how requests
/// to a path are answered with ``Behavior``s: queued one-shot behaviours first, then the path's
/// default, then ``Behavior/normal``. Every request is recorded, and the body bytes written for
/// each path are counted as their writes complete.
///
/// ```swift
/// let server = try await TestServer.start()
/// server.serve("/file", Resource(body: Resource.random(size: 1 << 20, seed: 1), etag: "\"v1\""))
/// server.enqueue("/file", .cutAfter(bytes: 1000), .status(503, headers: [("Retry-After", "1")]))
/// // ... run the client against server.url("/file") ...
/// try await server.shutdown()
/// ```
///
/// The server runs on NIO's shared event loops (a group per server held three descriptors and a
/// thread each: with hundreds of tests at once, over a thousand descriptors, past what Foundation's
/// `Process.run()` survives) and never blocks them. Connections are kept alive between requests
/// unless the client or a behaviour asks otherwise.
public final class TestServer: Sendable {
    /// The port the server listens on, on 127.0.0.1.
    public let port: Int
    /// `http://127.0.0.1:PORT`, or `https://127.0.0.1:PORT` with TLS; no trailing slash.
    public let baseURL: String

    private let listener: any Channel
    private let store: Store

    private init(listener: any Channel, store: Store, host: String, port: Int, isTLS: Bool) {
        self.listener = listener
        self.store = store
        self.port = port
        self.baseURL = "\(isTLS ? "https" : "http")://\(host):\(port)"
    }

    deinit {
        // A test that forgot shutdown() must not leave the port listening.
        if !self.store.isShutDown {
            self.listener.close(promise: nil)
        }
    }

    /// Starts a server on a loopback address on a free port.
    ///
    /// - Parameters:
    ///   - tls: The certificate to serve HTTPS with, or `nil` for plain HTTP.
    ///   - host: The loopback address to bind; another address in 127.0.0.0/8 (such as 127.0.0.2)
    ///     makes a second "host" for per-host limits.
    /// - Returns: The running server; call ``shutdown()`` when done.
    /// - Throws: When the certificate cannot be loaded or the socket cannot be bound.
    /// The test servers' own event loop, apart from the loops the client under test runs on (the
    /// singleton group), as a real server is apart from its client: a client whose loops stall does
    /// not stall its server's pacing (which then sent its backlog in one burst), and the other way round.
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    public static func start(tls: TestCertificate? = nil, host: String = "127.0.0.1") async throws -> TestServer {
        let sslContext = try tls.map(Self.makeSSLContext(for:))
        let store = Store()
        let listener = try await ServerBootstrap(group: Self.group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try Self.configure(channel, store: store, sslContext: sslContext)
                }
            }
            .bind(host: host, port: 0)
            .get()
        guard let port = listener.localAddress?.port else {
            try? await listener.close()
            throw TestServerError(code: .bindFailed, message: "the listening socket has no port")
        }
        return TestServer(listener: listener, store: store, host: host, port: port, isTLS: sslContext != nil)
    }

    /// Returns the full URL of a path on this server.
    ///
    /// - Parameter path: A path starting with `/`, optionally with a query string.
    /// - Returns: ``baseURL`` followed by `path`.
    public func url(_ path: String) -> String {
        self.baseURL + path
    }

    /// Installs or replaces the resource at a path.
    ///
    /// - Parameters:
    ///   - path: The path without query string; requests match it whatever their query.
    ///   - resource: What to serve there.
    public func serve(_ path: String, _ resource: Resource) {
        self.store.serve(resource, at: path)
    }

    /// Queues one-shot behaviours for the next requests to a path, one per request, in order.
    ///
    /// Queued behaviours take precedence over the default set with ``setDefault(_:_:)``, and apply
    /// to every method, `HEAD` included.
    ///
    /// - Parameters:
    ///   - path: The path without query string.
    ///   - behaviors: The behaviours, appended after any already queued.
    public func enqueue(_ path: String, _ behaviors: Behavior...) {
        self.store.enqueue(behaviors, for: path)
    }

    /// Sets the behaviour for every request to a path once its queue is empty.
    ///
    /// - Parameters:
    ///   - path: The path without query string.
    ///   - behavior: The standing behaviour, or `nil` for ``Behavior/normal``.
    public func setDefault(_ path: String, _ behavior: Behavior?) {
        self.store.setDefault(behavior, for: path)
    }

    /// Every request received so far, in arrival order.
    public var requests: [RecordedRequest] {
        self.store.requests
    }

    /// The requests received so far for one path, in arrival order.
    ///
    /// - Parameter path: The path without query string.
    /// - Returns: The matching subset of ``requests``.
    public func requests(to path: String) -> [RecordedRequest] {
        self.store.requests.filter { $0.path == path }
    }

    /// The response-body bytes written to connections for a path so far.
    ///
    /// A slice counts once its write has completed, that is once it was handed to the socket (or,
    /// with TLS, encrypted and handed to the socket); bytes the server never sent do not count.
    ///
    /// - Parameter path: The path without query string.
    /// - Returns: The total over all requests to that path.
    public func bodyBytesSent(to path: String) -> Int {
        self.store.bodyBytesSent(to: path)
    }

    /// When each response was being answered: from the request's arrival to its last byte handed
    /// to the socket (or the connection's end). Open responses end at the time of the call.
    public var responseIntervals: [Range<ContinuousClock.Instant>] {
        self.store.responseIntervals
    }

    /// The most responses this server was answering at one moment.
    public var maxConcurrentResponses: Int {
        Self.maxOverlap(self.store.responseIntervals)
    }

    /// Responses being answered now.
    public var openResponses: Int {
        self.store.openResponseCount
    }

    /// Connections open now.
    public var openConnections: Int {
        self.store.openConnectionCount
    }

    /// The largest number of intervals that overlap at one instant (for limits across servers).
    public static func maxOverlap(_ intervals: [Range<ContinuousClock.Instant>]) -> Int {
        // At equal instants an end sorts before a start: touching intervals do not overlap.
        var points: [(time: ContinuousClock.Instant, change: Int)] = []
        for interval in intervals {
            points.append((interval.lowerBound, 1))
            points.append((interval.upperBound, -1))
        }
        points.sort { a, b in a.time != b.time ? a.time < b.time : a.change < b.change }
        var current = 0
        var most = 0
        for point in points {
            current += point.change
            most = max(most, current)
        }
        return most
    }

    /// The number of connections accepted so far.
    public var connectionsAccepted: Int {
        self.store.connectionsAccepted
    }

    /// Stops listening and closes every open connection (stalled ones included).
    ///
    /// Connections are closed at the socket, without a TLS `close_notify`. Calling it again, or
    /// while a first call is in progress, returns at once.
    ///
    /// - Throws: Nothing today; kept throwing for callers written against a server that did.
    public func shutdown() async throws {
        guard let connections = self.store.beginShutdown() else { return }
        try? await self.listener.close()
        for connection in connections {
            connection.eventLoop.execute {
                ConnectionTracker.abort(connection, reset: false)
            }
        }
    }

    private static func makeSSLContext(for certificate: TestCertificate) throws -> NIOSSLContext {
        let chain = try NIOSSLCertificate.fromPEMFile(certificate.certificatePath)
            .map(NIOSSLCertificateSource.certificate)
        let key = try NIOSSLPrivateKey(file: certificate.keyPath, format: .pem)
        let configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain,
            privateKey: .privateKey(key)
        )
        return try NIOSSLContext(configuration: configuration)
    }

    /// Builds a connection's pipeline: tracker, TLS when configured, HTTP/1.1 codec, handler.
    private static func configure(_ channel: any Channel, store: Store, sslContext: NIOSSLContext?) throws {
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(ConnectionTracker(store: store))
        if let sslContext {
            try pipeline.addHandler(NIOSSLServerHandler(context: sslContext))
        }
        try pipeline.configureHTTPServerPipeline(withPipeliningAssistance: true, withErrorHandling: true)
        try pipeline.addHandler(Handler(store: store, connectionID: store.nextConnectionID()))
    }
}
