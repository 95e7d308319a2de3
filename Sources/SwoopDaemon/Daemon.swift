import Hummingbird
import Logging
import ServiceLifecycle
import SwoopKit
import SwoopRPC
import NIOConcurrencyHelpers

/// `swoop daemon`: a ``DownloadManager`` that keeps running, driven over aria2's JSON-RPC.
///
/// Its services, in one `ServiceGroup`: the manager (``DownloadService``: reconcile, run, save on
/// shutdown), the HTTP server, and the forwarding of the manager's events to WebSocket sessions as
/// aria2's notifications. At start it continues every download that was waiting, interrupted or
/// left active by a daemon that died; paused and failed ones wait to be asked.
public final class Daemon: Sendable {
    public struct Options: Sendable {
        public var listen: ListenAddress
        public var secret: String
        public var roots: DownloadRoots
        public var allowHosts: [String] = []
        public var allowOrigins: [String] = []
        public var maxConnections = 64
        public var maxBodyBytes = 1 << 20
        /// Where `daemon.json` goes (the state directory), or `nil` for none.
        public var stateDirectory: String?
        /// A fleet this daemon is a node of: its queue is the catalogue's, shared with the others.
        public var fleet: Fleet?

        public init(listen: ListenAddress, secret: String, roots: DownloadRoots) {
            self.listen = listen
            self.secret = secret
            self.roots = roots
        }
    }

    /// A fleet's shared catalogue and this node's part in it.
    public struct Fleet: Sendable {
        public var catalogue: any DownloadCatalogue
        public var member: FleetMember.Settings

        public init(catalogue: any DownloadCatalogue, member: FleetMember.Settings) {
            self.catalogue = catalogue
            self.member = member
        }
    }

    public let manager: DownloadManager
    public let options: Options
    let logger: Logger
    let hub = NotificationHub()

    /// - Throws: ``DaemonError`` when the address is not loopback and no secret was given
    ///   explicitly (`secretWasGiven`).
    public init(manager: DownloadManager, options: Options, secretWasGiven: Bool, logger: Logger) throws {
        try Self.check(options.listen, secretWasGiven: secretWasGiven)
        self.manager = manager
        self.options = options
        self.logger = logger
    }

    /// Refuses an address other machines can reach unless the secret was chosen by the user.
    public static func check(_ listen: ListenAddress, secretWasGiven: Bool) throws {
        guard listen.isLoopback || secretWasGiven else {
            throw DaemonError("--listen \(listen): a daemon reachable from other machines needs a secret of your choosing (--secret or --secret-file)")
        }
    }

    /// Runs until SIGINT or SIGTERM (or an RPC `shutdown`), then stops cleanly: transfers saved,
    /// sessions closed, `daemon.json` removed.
    ///
    /// - Parameter onRunning: Called with the bound address once the server listens and the queue runs.
    public func run(onRunning: @escaping @Sendable (ListenAddress) async -> Void = { _ in }) async throws {
        let service = DownloadService(manager: manager)
        let trigger = ShutdownTrigger()
        let fleet = options.fleet
        let member = fleet.map { fleet in
            FleetMember(manager: self.manager, catalogue: fleet.catalogue, settings: fleet.member, logger: self.logger) { [roots = options.roots] entry in
                try Aria2Options.request(for: entry, roots: roots)
            }
        }
        if let fleet {
            // The schema first (made or migrated by the first daemon): an unreachable database stops the start here.
            try await fleet.catalogue.prepare()
            try await FleetMember.join(catalogue: fleet.catalogue, settings: fleet.member, logger: logger)
        }
        var rpcSettings = Aria2RPC.Settings(secret: options.secret, roots: options.roots, catalogue: fleet?.catalogue)
        if let fleet {
            rpcSettings.nodeSilence = fleet.member.lease
            rpcSettings.node = fleet.member.node
        }
        let rpc = Aria2RPC(manager: manager, settings: rpcSettings) { _ in
            trigger.fire()
        }
        var serverOptions = DaemonServer.Options(listen: options.listen)
        serverOptions.allowHosts = options.allowHosts
        serverOptions.allowOrigins = options.allowOrigins
        serverOptions.maxConnections = options.maxConnections
        serverOptions.limits.maxBodyBytes = options.maxBodyBytes
        let events = manager.events()
        let metrics = DaemonMetrics()
        let forwarder = EventForwarder(events: events, rpc: rpc, hub: hub, metrics: metrics, logger: logger)
        let (secret, stateDirectory, manager, logger) = (options.secret, options.stateDirectory, manager, logger)
        // Hummingbird's own lines (its start, a refused upgrade's "error handling upgrade result")
        // only when debugging.
        var serverLogger = logger
        if logger.logLevel > .debug { serverLogger.logLevel = .critical }
        let app = DaemonServer.make(options: serverOptions, rpc: rpc, hub: hub, metrics: metrics, logger: serverLogger) { bound in
            // The queue first: a client that connects may add at once.
            do {
                _ = try await service.reconciled()
                // A fleet's node runs what it claims: its own unfinished downloads wait for their claims.
                if fleet == nil { _ = try await manager.resumeAll(states: [.waiting, .interrupted, .active]) }
            } catch {
                logger.error("cannot continue the unfinished downloads: \(error)")
            }
            let url = "http://\(bound)"
            if let stateDirectory {
                do {
                    try DaemonAddress(url: url, secret: secret).write(in: stateDirectory)
                } catch {
                    logger.warning("cannot record the daemon's address for swoop commands: \(error)")
                }
            }
            await member?.announce(address: "\(bound)")
            await onRunning(bound)
        }
        let group = ServiceGroup(
            // Stopped last to first: the server, then the manager (its transfers stopped and saved), then
            // the fleet member, which gives back its claims only once nothing writes them here.
            configuration: .init(
                services: (member.map { [$0] } ?? []) + [service, forwarder, app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger
            )
        )
        trigger.set { Task { await group.triggerGracefulShutdown() } }
        defer {
            hub.closeAll()
            if let stateDirectory { DaemonAddress.remove(in: stateDirectory) }
        }
        do {
            try await group.run()
        } catch {
            await fleet?.catalogue.close()
            throw error
        }
        await fleet?.catalogue.close()
    }
}

/// The manager's events to aria2 notifications for every WebSocket session, to the metrics and to
/// the log.
struct EventForwarder: Service {
    let events: DownloadEvents
    let rpc: Aria2RPC
    let hub: NotificationHub
    let metrics: DaemonMetrics
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await event in events {
                log(event)
                metrics.observe(event)
                for notification in rpc.notifications(for: event) {
                    hub.send(String(decoding: notification.json.serialized(), as: UTF8.self))
                }
            }
        }
    }

    func log(_ event: DownloadEvent) {
        let download = event.download
        let metadata: Logger.Metadata = ["download": "\(download.id)", "url": "\(download.url)"]
        switch event {
        case .added: logger.info("added", metadata: metadata)
        case .started: logger.info("started", metadata: metadata)
        case .completed, .alreadyComplete: logger.info("completed", metadata: metadata.merging(["path": "\(download.destination ?? "")"]) { $1 })
        case .paused: logger.info("\(download.state.rawValue)", metadata: metadata)
        case .removed: logger.info("removed", metadata: metadata)
        case .failed(_, let error): logger.error("failed: \(error.message)", metadata: metadata)
        case .notice(_, let text): logger.notice("\(text)", metadata: metadata)
        case .progress: logger.trace("progress \(download.completedBytes)", metadata: metadata)
        }
    }
}

/// Lets an RPC `shutdown` reach the service group made after the RPC layer.
final class ShutdownTrigger: Sendable {
    private let action = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)
    func set(_ body: @escaping @Sendable () -> Void) { action.withLockedValue { $0 = body } }
    func fire() { action.withLockedValue { $0 }?() }
}
