import ArgumentParser
import Foundation
import SwoopConsole
import SwoopKit
import SwoopStore

/// Opens the store and a manager (without running it) for a command that changes downloads.
private func withManager<T>(
    _ global: GlobalOptions, console: Console, _ body: (DownloadManager, [Download]) async throws -> T
) async throws -> T {
    let manager: DownloadManager
    do {
        var configuration = SwoopKit.Configuration()
        configuration.lockDirectory = try global.lockDirectory()
        // These commands make no requests: a bad *_proxy variable must not stop them.
        configuration.proxy.useEnvironment = false
        manager = try DownloadManager(configuration: configuration, store: try global.openStore())
    } catch let error as SwoopError {
        throw error.exit(on: console)
    }
    do {
        let result = try await body(manager, try await manager.downloads())
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
private func forEachDownload(
    _ ids: [String], global: GlobalOptions, verb: String, suffix: String = "",
    _ action: @escaping @Sendable (DownloadManager, Download) async throws -> Download
) async throws {
    let console = Console(quiet: global.quiet)
    let interruption = Interruption()
    let work = Task {
        try await eachDownload(ids, global: global, console: console, verb: verb, suffix: suffix, action)
    }
    interruption.onSignal { work.cancel() }
    defer { interruption.stop() }
    let status = try await work.value
    if status != ExitStatus.success { throw ExitCode(status) }
}

private func eachDownload(
    _ ids: [String], global: GlobalOptions, console: Console, verb: String, suffix: String,
    _ action: @escaping @Sendable (DownloadManager, Download) async throws -> Download
) async throws -> Int32 {
    try await withManager(global, console: console) { manager, downloads in
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

/// `swoop pause ID…`
struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pause downloads, here or in the swoop that runs them; they stay paused until resumed by id (or --all)."
    )

    @Argument(help: "Download ids (or unique prefixes, see `swoop ls`).")
    var ids: [String]

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        try await forEachDownload(ids, global: global, verb: "paused") { manager, download in
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

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if ids.isEmpty && !failed && !completed { throw ValidationError("give download ids, or --failed / --completed") }
    }

    func run() async throws {
        var ids = self.ids
        if failed || completed {
            let states: Set<Download.State> = Set((failed ? [.failed] : []) + (completed ? [.completed] : []))
            do {
                let store = try global.openStore()
                defer { try? store.close() }
                ids += try store.all().filter { states.contains($0.state) }.map(\.id.rawValue)
            } catch let error as SwoopError {
                throw error.exit(on: Console(quiet: global.quiet))
            }
            if ids.isEmpty {
                Console(quiet: global.quiet).notice("nothing to remove")
                return
            }
        }
        let said = deleteFile ? " (and its file)" : ""
        try await forEachDownload(ids, global: global, verb: "removed", suffix: said) { [deleteFile] manager, download in
            try await manager.remove(download.id, deletingFile: deleteFile)
            var removed = download
            removed.state = .removed
            return removed
        }
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
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if !ids.isEmpty && (failed || all) { throw ValidationError("--failed and --all are for a resume without ids") }
        if url != nil && ids.count != 1 { throw ValidationError("--url takes exactly one download id") }
    }

    func run() async throws {
        let console = Console(quiet: global.quiet)
        if transfer.insecure {
            console.warning("TLS certificate verification is OFF (--insecure): anyone on the path can read and change this download")
        }
        // Paused and failed downloads do not come back on every bare resume: only when asked.
        var states: Set<Download.State> = [.waiting, .interrupted, .active]
        if failed || all { states.insert(.failed) }
        if all { states.insert(.paused) }
        try await DownloadSession(global: global, transfer: transfer, console: console)
            .run(.resume(ids.isEmpty ? nil : ids, states: states, url: url))
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
        try await forEachDownload([id], global: global, verb: "limited", suffix: said) { manager, download in
            try await manager.setRateLimit(download.id, bytesPerSecond: limit)
            return try await manager.download(id: download.id)
        }
    }
}
