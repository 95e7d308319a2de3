import ArgumentParser
import Foundation
import Logging
import NIOCore
import SwoopConsole
import SwoopDaemon
import SwoopKit
import SwoopPostgres
import SwoopRPC

/// `swoop daemon`: downloads as a service, driven over aria2's JSON-RPC.
struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run as a service that aria2 clients drive (JSON-RPC over HTTP and WebSocket at /jsonrpc), until SIGINT or SIGTERM.",
        discussion: """
            Listens on loopback unless --listen names another address (which needs --secret or --secret-file). \
            Without a secret one is made at the first start, kept in the state directory (rpc-secret, mode 0600) \
            and printed once. While it runs, `swoop add`, `ls`, `pause`, `resume` and `rm` on the same state directory act through it.
            """
    )

    @Option(help: ArgumentHelp("Address to listen on: HOST:PORT or [IPv6]:PORT (port 0: any free one).", valueName: "address"))
    var listen = "127.0.0.1:6800"

    @Option(help: ArgumentHelp("The RPC secret clients send as token:SECRET (visible in `ps`: prefer --secret-file).", valueName: "token"))
    var secret: String?

    @Option(help: ArgumentHelp("Read the RPC secret from this file.", valueName: "path"))
    var secretFile: String?

    @Option(name: [.customShort("d"), .customLong("dir")], help: ArgumentHelp("Where downloads go by default.", valueName: "dir"))
    var directory = "."

    @Option(help: ArgumentHelp("Another directory downloads may go into (a download's dir must lie inside -d or one of these).", valueName: "dir"))
    var allowDir: [String] = []

    @Option(help: ArgumentHelp("Another name clients may reach the daemon by (the Host header; by default only its address, localhost, 127.0.0.1 and [::1]).", valueName: "name"))
    var allowHost: [String] = []

    @Option(help: ArgumentHelp("A web page origin that may call the daemon from a browser (e.g. https://ui.example.com).", valueName: "origin"))
    var allowOrigin: [String] = []

    @Option(help: ArgumentHelp("Most client connections at once.", valueName: "n"))
    var maxConnections = 64

    @Option(help: ArgumentHelp("trace, debug, info, notice, warning, error or critical.", valueName: "level"))
    var logLevel = "info"

    @Option(help: ArgumentHelp("With --store: this daemon's name in the fleet (default: the host name).", valueName: "name"))
    var node: String?

    @Option(help: ArgumentHelp("With --store: most downloads running in the whole fleet at once (default: no limit but each daemon's -j).", valueName: "n"))
    var fleetMaxConcurrent: Int?

    @Option(help: ArgumentHelp("With --store: how long a download stays claimed by a daemon that stops beating (default 15; it beats every third of it).", valueName: "seconds"))
    var lease: Double?

    @Flag(help: ArgumentHelp("With --store: -d is the same directory on every daemon of the fleet (NFS or similar); a large file is split into parts that every daemon fetches into it."))
    var sharedDir = false

    @Option(help: ArgumentHelp("With --shared-dir: the size of a split file's parts (default 64M); files under two parts run on one daemon.", valueName: "size"))
    var partSize: String?

    @OptionGroup var transfer: TransferOptions
    @OptionGroup var fleet: FleetOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if secret != nil && secretFile != nil { throw ValidationError("give --secret or --secret-file, not both") }
        if Logger.Level(rawValue: logLevel) == nil { throw ValidationError("--log-level \(logLevel): use trace, debug, info, notice, warning, error or critical") }
        if maxConnections < 1 { throw ValidationError("--max-connections must be at least 1") }
        if fleet.store == nil, node != nil || fleetMaxConcurrent != nil || lease != nil || sharedDir {
            throw ValidationError("--node, --lease, --fleet-max-concurrent and --shared-dir are for a daemon of a fleet (--store postgres://…)")
        }
        if partSize != nil, !sharedDir { throw ValidationError("--part-size is for a fleet's shared directory (--shared-dir)") }
        if let partSize, !((1 << 20)...(1 << 40)).contains(ByteFormatting.parseSize(partSize) ?? 0) {
            throw ValidationError("invalid --part-size '\(partSize)': give a size from 1M to 1T, such as 64M or 1G")
        }
        if let lease, !(0.3...3600).contains(lease) { throw ValidationError("--lease must be from 0.3 to 3600 seconds") }
        if let fleetMaxConcurrent, fleetMaxConcurrent < 1 { throw ValidationError("--fleet-max-concurrent must be at least 1") }
    }

    func run() async throws {
        let console = Console(quiet: global.quiet)
        let daemon: Daemon
        let lock: DaemonLock
        let isNewSecret: Bool
        let secretText: String
        do {
            // Everything that can be refused is checked before the manager (and its connections) exists.
            let listen = try ListenAddress(parsing: listen)
            let secretWasGiven = secret != nil || secretFile != nil
            try Daemon.check(listen, secretWasGiven: secretWasGiven)
            try FileSystem.createDirectories(global.stateDirectory, what: "state directory")
            lock = try DaemonLock.acquire(in: global.stateDirectory)
            let directory = DownloadRequest.absolute(self.directory)
            try FileSystem.createDirectories(directory, what: "download directory", mode: 0o777)
            var configuration = try transfer.configuration(lockDirectory: try global.lockDirectory())
            // The per-download options (-x, --min-split-size, --limit-rate, retries, timeouts) are the
            // daemon's defaults, aria2's global options: what a client's addUri (or `swoop add`)
            // does not set follows them, and getGlobalOption shows them.
            let defaults = try transfer.settings()
            configuration = defaults.applied(to: configuration)
            if let rate = defaults.bytesPerSecond { configuration.limits.perDownloadBytesPerSecond = rate == 0 ? nil : rate }
            configuration.credentials = try transfer.credentials(warn: console.warning)
            // aria2's remove keeps what was downloaded (`swoop rm --delete-file` deletes it).
            configuration.cancelKeepsPartFile = true
            let store = try global.openStore()
            (secretText, isNewSecret) = try DaemonSecret.resolve(given: secret, file: secretFile, stateDirectory: global.stateDirectory)
            var options = Daemon.Options(
                listen: listen, secret: secretText,
                roots: DownloadRoots(defaultDirectory: directory, allowed: allowDir.map(DownloadRequest.absolute))
            )
            options.allowHosts = allowHost
            options.allowOrigins = allowOrigin
            options.maxConnections = maxConnections
            options.stateDirectory = global.stateDirectory
            if let address = try fleet.address() {
                // Per host and in all, the fleet's limits count every daemon's downloads; -j is this one's.
                var member = FleetMember.Settings(
                    node: node ?? ProcessInfo.processInfo.hostName, address: "\(listen)", maxActive: transfer.maxConcurrent,
                    fleetMaxActive: fleetMaxConcurrent, fleetMaxPerHost: transfer.maxPerHost
                )
                member.lease = .milliseconds(Int((lease ?? 15) * 1000))
                member.heartbeat = member.lease / 3
                if sharedDir {
                    member.sharedDirectory = directory
                    if let size = partSize.flatMap(ByteFormatting.parseSize) { member.partSize = size }
                }
                options.fleet = Daemon.Fleet(catalogue: try PostgresCatalogue(address), member: member)
            }
            var logger = Logger(label: "swoop.daemon") { StreamLogHandler.standardError(label: $0) }
            logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
            let manager = try DownloadManager(configuration: configuration, store: store)
            daemon = try Daemon(manager: manager, options: options, secretWasGiven: secretWasGiven, logger: logger)
        } catch let error as SwoopError {
            throw error.exit(on: console)
        } catch let error as DaemonError {
            console.error(error.message)
            throw ExitCode(error.isInUse ? ExitStatus.inUse : ExitStatus.usage)
        }
        let stateDirectory = global.stateDirectory
        defer { withExtendedLifetime(lock) {} }
        do {
            try await run(daemon, stateDirectory: stateDirectory, secret: secretText, isNewSecret: isNewSecret, console: console)
            console.notice("daemon stopped; transfers saved (they continue at the next start)")
        } catch let error as IOError {
            // Binding is the only I/O the server does before it runs.
            console.error("cannot listen on \(listen): \(String(cString: strerror(error.errnoCode)))")
            throw ExitCode(ExitStatus.failure)
        } catch let error as SwoopError {
            // The fleet's catalogue, unreachable or refusing at the start.
            throw error.exit(on: console)
        }
    }

    private func run(_ daemon: Daemon, stateDirectory: String, secret secretText: String, isNewSecret: Bool, console: Console) async throws {
        try await daemon.run { bound in
            let address = "http://\(bound)/"
            console.result("swoop daemon: listening on \(address) (aria2 JSON-RPC at \(address)jsonrpc)")
            if let fleet = daemon.options.fleet, let store = try? self.fleet.address() {
                console.result("swoop daemon: node \(fleet.member.node) of the fleet at \(store.description): it runs downloads from the shared queue")
                if let shared = fleet.member.sharedDirectory {
                    console.result("swoop daemon: \(shared) is shared by the fleet: files of \(ByteFormatting.format(2 * fleet.member.partSize)) or more are split across its daemons")
                }
            }
            if isNewSecret {
                console.result("swoop daemon: a secret was made and kept in \(stateDirectory)/\(DaemonSecret.fileName): \(secretText)")
                console.result("swoop daemon: the page with it: \(address)#token=\(secretText)")
            } else if secret == nil && secretFile == nil {
                console.result("swoop daemon: clients send the secret kept in \(stateDirectory)/\(DaemonSecret.fileName) as token:SECRET")
                console.result("swoop daemon: the page: \(address) (it asks for that secret)")
            } else {
                console.result("swoop daemon: clients send the secret given as token:SECRET")
            }
        }
    }
}
