import ArgumentParser
import Foundation
import SwoopConsole
import SwoopKit
import SwoopRPC
import SwoopStore

/// Opens the store and a manager (without running it) for a command that changes downloads.
/// `creating`: the state directory and its database are made if missing (`add`); else a missing
/// one is an error (`pause`, `rm`, `resume`, `limit` of known downloads).
func withManager<T>(
    _ global: GlobalOptions, console: Console, creating: Bool = true, _ body: (DownloadManager) async throws -> T
) async throws -> T {
    let manager: DownloadManager
    do {
        let store = creating ? try global.openStore() : try global.openExistingStore()
        var configuration = SwoopKit.Configuration()
        configuration.lockDirectory = try global.lockDirectory()
        // These commands make no requests: a bad *_proxy variable must not stop them.
        configuration.proxy.useEnvironment = false
        manager = try DownloadManager(configuration: configuration, store: store)
    } catch let error as SwoopError {
        throw error.exit(on: console)
    }
    do {
        let result = try await body(manager)
        try? await manager.shutdown()
        return result
    } catch {
        try? await manager.shutdown()
        throw error
    }
}

/// Runs `action` on each id (given the download's snapshot, it returns the snapshot to report),
/// printing one line per download; exits with the first failure's status. Ctrl-C while it waits
/// for another swoop to answer withdraws the request (exit 130).
///
/// With a daemon on the state directory, `remote` does it through the daemon's RPC instead (see
/// ``forEachDownload(_:through:global:verb:suffix:_:)``), so that the change is live there at once.
private func forEachDownload(
    _ ids: [String], global: GlobalOptions, verb: String, suffix: String = "",
    remote: (@Sendable (DaemonClient, DaemonClient.Found) async throws -> String?)? = nil,
    _ action: @escaping @Sendable (DownloadManager, Download) async throws -> Download
) async throws {
    if let remote, let daemon = DaemonClient.find(global) {
        return try await forEachDownload(ids, through: daemon, global: global, verb: verb, suffix: suffix, remote)
    }
    try await interruptibly(global) { console in
        try await eachDownload(ids, global: global, console: console, verb: verb, suffix: suffix, action)
    }
}

/// Runs `remote` on each id through a daemon (given the download as the daemon knows it; it
/// returns the download's new URL if it moved), one line per download, as ``forEachDownload``.
private func forEachDownload(
    _ ids: [String], through daemon: DaemonClient, global: GlobalOptions, verb: String, suffix: String = "",
    _ remote: @escaping @Sendable (DaemonClient, DaemonClient.Found) async throws -> String?
) async throws {
    try await interruptibly(global) { console in
        await eachDownload(ids, daemon: daemon, console: console, verb: verb, suffix: suffix, remote)
    }
}

/// Runs `work` in a task that Ctrl-C cancels; exits with the status it returns.
private func interruptibly(_ global: GlobalOptions, _ work: @escaping @Sendable (Console) async throws -> Int32) async throws {
    let console = Console(quiet: global.quiet)
    let interruption = Interruption()
    let task = Task { try await work(console) }
    interruption.onSignal { task.cancel() }
    defer { interruption.stop() }
    let status = try await task.value
    if status != ExitStatus.success { throw ExitCode(status) }
}

private func eachDownload(
    _ ids: [String], global: GlobalOptions, console: Console, verb: String, suffix: String,
    _ action: @escaping @Sendable (DownloadManager, Download) async throws -> Download
) async throws -> Int32 {
    try await withManager(global, console: console, creating: false) { manager in
        let downloads = try await manager.downloads()
        var status = ExitStatus.success
        for text in ids where !Task.isCancelled {
            do {
                let id = try DownloadLookup.resolve(text, in: downloads)
                let current = try await manager.download(id: id)
                let download: Download
                do {
                    download = try await action(manager, current)
                } catch let error as SwoopError where error.code == .invalidArgument {
                    // "the download is already paused" needs to say which one.
                    throw SwoopError(error.code, "\(id.rawValue.prefix(8)) (\(current.url)): \(error.message)")
                }
                if global.json {
                    console.result(try JSONOutput.line(download))
                } else {
                    console.result("\(verb) \(id.rawValue.prefix(8)) \(download.url)\(suffix)")
                }
            } catch let error as SwoopError {
                console.error(error.userMessage)
                if status == ExitStatus.success { status = ExitStatus.code(for: error) }
            }
        }
        return status
    }
}

/// `eachDownload` through a daemon.
private func eachDownload(
    _ ids: [String], daemon: DaemonClient, console: Console, verb: String, suffix: String,
    _ action: @Sendable (DaemonClient, DaemonClient.Found) async throws -> String?
) async -> Int32 {
    var status = ExitStatus.success
    for text in ids where !Task.isCancelled {
        do {
            let found = try await daemon.resolve(text)
            let url: String?
            do {
                url = try await action(daemon, found)
            } catch let error as SwoopError where error.code == .invalidArgument {
                throw SwoopError(error.code, "\(found.gid.prefix(8)) (\(found.url)): \(error.message)")
            }
            console.result("\(verb) \(found.gid.prefix(8)) \(url ?? found.url)\(suffix)")
        } catch {
            let error = error as? SwoopError ?? SwoopError(.other, "\(error)")
            console.error(error.userMessage)
            if status == ExitStatus.success { status = ExitStatus.code(for: error) }
        }
    }
    return status
}

/// `swoop pause ID…`
struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pause downloads, here or in the swoop that runs them; they stay paused until resumed by id (or --all)."
    )

    @Argument(help: "Download ids (or unique prefixes, see `swoop ls`).")
    var ids: [String]

    @OptionGroup var fleet: FleetOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        if try await onFleet(fleet, .pause, ids, global) { return }
        let remote: @Sendable (DaemonClient, DaemonClient.Found) async throws -> String? = { daemon, found in
            _ = try await daemon.call("aria2.pause", [.string(found.gid)])
            return nil
        }
        try await forEachDownload(ids, global: global, verb: "paused", remote: remote) { manager, download in
            try await manager.pause(download.id)
            return try await manager.download(id: download.id)
        }
    }
}

/// `swoop rm ID… [--delete-file]`
struct RemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Forget downloads (a running one stops, in whichever swoop runs it); with --delete-file also delete their files."
    )

    @Argument(help: "Download ids (or unique prefixes, see `swoop ls`).")
    var ids: [String] = []

    @Flag(help: "Forget every failed download (aria2's purgeDownloadResult for failures).")
    var failed = false

    @Flag(help: "Forget every completed download (their files stay).")
    var completed = false

    @Flag(help: "Also delete the part file, or the finished file if it is unchanged.")
    var deleteFile = false

    @OptionGroup var fleet: FleetOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if ids.isEmpty && !failed && !completed { throw ValidationError("give download ids, or --failed / --completed") }
        if fleet.store != nil, deleteFile {
            throw ValidationError("--delete-file deletes files on this machine; a fleet's files are on its nodes: call swoop.removeWithFile on the node that has it")
        }
    }

    func run() async throws {
        if fleet.store != nil {
            let console = Console(quiet: global.quiet)
            do {
                guard let catalogue = try await fleet.catalogue() else { return }
                try await withCatalogue(catalogue) { [ids, failed, completed] catalogue in
                    if !ids.isEmpty { try await FleetActions.remove(ids: ids, in: catalogue, console: console) }
                    let states: Set<Download.State> = Set((failed ? [.failed] : []) + (completed ? [.completed] : []))
                    if !states.isEmpty { try await FleetActions.forget(states, in: catalogue, console: console) }
                }
            } catch let error as SwoopError {
                throw error.exit(on: console)
            }
            return
        }
        var ids = self.ids
        if failed || completed {
            let states: Set<Download.State> = Set((failed ? [.failed] : []) + (completed ? [.completed] : []))
            // No state database: nothing to remove, and none made.
            do {
                if global.hasStore {
                    let store = try global.openStore()
                    defer { try? store.close() }
                    ids += try store.all().filter { states.contains($0.state) }.map(\.id.rawValue)
                }
            } catch let error as SwoopError {
                throw error.exit(on: Console(quiet: global.quiet))
            }
            if ids.isEmpty {
                Console(quiet: global.quiet).notice("nothing to remove" + (global.hasStore ? "" : ": \(global.noStore)"))
                return
            }
        }
        let said = deleteFile ? " (and its file)" : ""
        // Deleting files is not an aria2 call: with --delete-file the store path asks the daemon.
        let console = Console(quiet: global.quiet)
        // Spelled out: the closure in a ternary crashed the 6.3.1 type checker.
        let remote: (@Sendable (DaemonClient, DaemonClient.Found) async throws -> String?)?
        if deleteFile {
            remote = nil
        } else {
            remote = { @Sendable (daemon: DaemonClient, found: DaemonClient.Found) async throws -> String? in
                try await Self.forget(daemon, found, console: console)
                return nil
            }
        }
        try await forEachDownload(ids, global: global, verb: "removed", suffix: said, remote: remote) { [deleteFile] manager, download in
            let part = deleteFile ? nil : try await manager.partFile(of: download.id)
            try await manager.remove(download.id, deletingFile: deleteFile)
            if let part { Self.sayKept(part, console: console) }
            var removed = download
            removed.state = .removed
            return removed
        }
    }
}

extension RemoveCommand {
    /// Forgets a download the daemon knows: stopped first if it is not, then its result removed;
    /// says where its part file stays, as without a daemon.
    static func forget(_ daemon: DaemonClient, _ found: DaemonClient.Found, console: Console) async throws {
        let stopped: Set<String> = ["complete", "error", "removed"]
        if !stopped.contains(found.status) { _ = try await daemon.call("aria2.remove", [.string(found.gid)]) }
        _ = try await daemon.call("aria2.removeDownloadResult", [.string(found.gid)])
        if found.status != "complete", !found.path.isEmpty { sayKept(found.path + FileNaming.partSuffix, console: console) }
    }

    /// Once a download is forgotten, `ls --orphans` finds its bytes only in a directory another
    /// download names: says where they are, when they are there.
    static func sayKept(_ part: String, console: Console) {
        guard FileManager.default.fileExists(atPath: part) else { return }
        console.notice("kept \(part): the download is forgotten, not its bytes (`rm --delete-file` deletes them too)")
    }
}

/// `swoop resume [ID…]`
struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Continue unfinished downloads with their stored settings (options given here replace them)."
    )

    @Argument(help: "Download ids (or unique prefixes); none means every waiting or interrupted download (not paused or failed ones).")
    var ids: [String] = []

    @Flag(help: "Without ids: retry the failed downloads too.")
    var failed = false

    @Flag(help: "Without ids: every unfinished download, paused and failed ones included.")
    var all = false

    @Option(help: ArgumentHelp("With one id: replace its URL with this one (a re-signed link for the same file) and continue.", valueName: "url"))
    var url: String?

    @OptionGroup var transfer: TransferOptions
    @OptionGroup var fleet: FleetOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if !ids.isEmpty && (failed || all) { throw ValidationError("--failed and --all are for a resume without ids") }
        if url != nil && ids.count != 1 { throw ValidationError("--url takes exactly one download id") }
        if fleet.store != nil && (ids.isEmpty || url != nil) { throw ValidationError("with --store, give the ids of the fleet's downloads to resume") }
    }

    func run() async throws {
        if try await onFleet(fleet, .resume, ids, global) { return }
        let console = Console(quiet: global.quiet)
        if transfer.insecure {
            console.warning("TLS certificate verification is OFF (--insecure): anyone on the path can read and change this download")
        }
        // Paused and failed downloads do not come back on every bare resume: only when asked.
        var states: Set<Download.State> = [.waiting, .interrupted, .active]
        if failed || all { states.insert(.failed) }
        if all { states.insert(.paused) }
        if let daemon = DaemonClient.find(global) {
            return try await resume(through: daemon, states: states, console: console)
        }
        try await DownloadSession(global: global, transfer: transfer, console: console)
            .run(.resume(ids.isEmpty ? nil : ids, states: states, url: url))
    }
}

extension ResumeCommand {
    /// Resuming what a daemon on the state directory runs: it continues the downloads itself
    /// (`unpause`; a new URL through `changeUri` first). Without ids: the stopped downloads of
    /// `states` (waiting and running ones are the daemon's already).
    func resume(through daemon: DaemonClient, states: Set<Download.State>, console: Console) async throws {
        let options: [String: JSONValue]
        do {
            guard try transfer.parsedHeaders().isEmpty else {
                throw SwoopError(.invalidArgument, "-H cannot change a download the daemon on \(global.stateDirectory) runs")
            }
            options = Aria2Options.json(settings: try transfer.settings())
        } catch let error as SwoopError {
            throw error.exit(on: console)
        }
        var ids = self.ids
        if ids.isEmpty {
            let store = try global.openStore()
            defer { try? store.close() }
            let stopped = states.intersection([.paused, .interrupted, .failed])
            ids = try store.all().filter { stopped.contains($0.state) }.map(\.id.rawValue)
            if ids.isEmpty {
                console.notice("nothing to resume: the daemon runs every waiting download")
                return
            }
        }
        let url = self.url
        try await forEachDownload(ids, through: daemon, global: global, verb: "resumed") { daemon, found in
            let (gid, status) = (found.gid, found.status)
            switch status {
            case "complete": throw SwoopError(.invalidArgument, "the download is already complete")
            case "removed": throw SwoopError(.invalidArgument, "the download was removed")
            case "active" where options.isEmpty && url == nil, "waiting" where options.isEmpty && url == nil:
                throw SwoopError(.invalidArgument, "the download is already \(status)")
            default: break
            }
            if !options.isEmpty { _ = try await daemon.call("aria2.changeOption", [.string(gid), .object(options)]) }
            if let url {
                _ = try await daemon.call("aria2.changeUri", [.string(gid), 1, [.string(found.url)], [.string(url)]])
            }
            if status == "paused" || status == "error" { _ = try await daemon.call("aria2.unpause", [.string(gid)]) }
            // The URL as the daemon keeps it, when it moved.
            return url == nil ? nil : try await daemon.url(of: gid)
        }
    }
}

/// `swoop limit ID RATE`
struct LimitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "limit",
        abstract: "Change a download's rate limit: at once where it runs (here or in another terminal), and stored with it."
    )

    @Argument(help: "A download id (or unique prefix, see `swoop ls`).")
    var id: String

    @Argument(help: ArgumentHelp("Bytes per second (K, M, G suffixes); 0 for no limit.", valueName: "rate"))
    var rate: String

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let limit: Int?
        do {
            limit = try TransferOptions.rate(rate, option: "rate") ?? nil
        } catch let error as SwoopError {
            throw error.exit(on: Console(quiet: global.quiet))
        }
        let said = " to " + (limit.map { ByteFormatting.rate(Double($0)) } ?? "no limit")
        let remote: @Sendable (DaemonClient, DaemonClient.Found) async throws -> String? = { daemon, found in
            _ = try await daemon.call("aria2.changeOption", [.string(found.gid), ["max-download-limit": .string(String(limit ?? 0))]])
            return nil
        }
        try await forEachDownload([id], global: global, verb: "limited", suffix: said, remote: remote) { manager, download in
            try await manager.setRateLimit(download.id, bytesPerSecond: limit)
            return try await manager.download(id: download.id)
        }
    }
}

/// With `--store`: `control` on the fleet's downloads `ids`, wherever they run. Returns `false`
/// without `--store`.
func onFleet(_ fleet: FleetOptions, _ control: CatalogueControl, _ ids: [String], _ global: GlobalOptions) async throws -> Bool {
    guard fleet.store != nil else { return false }
    let console = Console(quiet: global.quiet)
    do {
        guard let catalogue = try await fleet.catalogue() else { return false }
        try await withCatalogue(catalogue) { try await FleetActions.control(control, ids: ids, in: $0, console: console) }
    } catch let error as SwoopError {
        throw error.exit(on: console)
    }
    return true
}
