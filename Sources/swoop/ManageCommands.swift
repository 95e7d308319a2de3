import ArgumentParser
import Foundation
import SwoopConsole
import SwoopKit
import SwoopStore

/// `swoop ls`: the downloads in the store.
struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls",
        abstract: "List the downloads Swoop knows (works while another swoop is downloading)."
    )

    @Option(help: ArgumentHelp("Only downloads in these states (comma-separated).", valueName: "states"))
    var state: String?

    @Flag(help: "List the part files (*.swoop) in the download directories that no download owns instead.")
    var orphans = false

    @Flag(help: "Show errors in full instead of cut to the column.")
    var long = false

    @Argument(help: "Download ids (or unique prefixes): show these in full, one field a line.")
    var ids: [String] = []

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let console = Console(quiet: global.quiet)
        do {
            let states = try state.map(Self.parseStates)
            let store = try global.openStore()
            defer { try? store.close() }
            if orphans {
                let paths = DownloadManager.orphanedPartFiles(try store.all())
                if global.json {
                    console.result(try JSONOutput.line(paths))
                } else if paths.isEmpty {
                    console.result("no orphaned part files in the download directories Swoop knows")
                } else {
                    console.result(paths.joined(separator: "\n"))
                }
                return
            }
            var downloads = try store.all().map { record in
                record.snapshot(bytesPerSecond: record.state == .active ? record.bytesPerSecond : 0)
            }.filter { states?.contains($0.state) ?? true }
            if !ids.isEmpty {
                let chosen = try ids.map { try DownloadLookup.resolve($0, in: downloads) }
                downloads = chosen.compactMap { id in downloads.first { $0.id == id } }
                if !global.json {
                    console.result(downloads.map(DownloadTable.details).joined(separator: "\n\n"))
                    return
                }
            }
            if global.json {
                console.result(try JSONOutput.line(downloads))
            } else if downloads.isEmpty {
                console.result("no downloads")
            } else {
                console.result(DownloadTable.render(downloads, fullErrors: long).joined(separator: "\n"))
            }
        } catch let error as SwoopError {
            throw error.exit(on: console)
        }
    }

    static func parseStates(_ text: String) throws -> Set<Download.State> {
        Set(try text.split(separator: ",").map { name in
            guard let state = Download.State(rawValue: name.trimmingCharacters(in: .whitespaces)) else {
                let known = Download.State.allCases.map(\.rawValue).joined(separator: ", ")
                throw SwoopError(.invalidArgument, "unknown state '\(name)': use \(known)")
            }
            return state
        })
    }
}

/// The table `swoop ls` prints.
enum DownloadTable {
    /// One download in full, one field a line (`swoop ls ID`).
    static func details(_ download: Download) -> String {
        let size = download.totalBytes.map { "\(ByteFormatting.format($0)) (\($0) bytes)" } ?? "unknown"
        let done = download.fractionCompleted.map { String(format: "%.1f%%", $0 * 100) + ", " } ?? ""
        var lines = [
            "id:     \(download.id.rawValue)",
            "url:    \(download.url)",
            "state:  \(download.state.rawValue)",
            "path:   \(download.destination ?? "(not named yet)")",
            "size:   \(size)",
            "done:   \(done)\(download.completedBytes) bytes",
        ]
        if download.state == .active { lines.append("speed:  \(ByteFormatting.rate(download.bytesPerSecond))") }
        if let error = download.error { lines.append("error:  \(error)") }
        return lines.joined(separator: "\n")
    }

    /// - Parameter fullErrors: Errors in full (`--long`) rather than cut to 40 columns.
    static func render(_ downloads: [Download], fullErrors: Bool = false) -> [String] {
        let header = ["ID", "STATE", "DONE", "SIZE", "SPEED/ERROR", "PATH"]
        let rows = downloads.map { download -> [String] in
            let done = download.fractionCompleted.map { String(format: "%.1f%%", $0 * 100) } ?? ByteFormatting.format(download.completedBytes)
            let size = download.totalBytes.map(ByteFormatting.format) ?? "?"
            let speedOrError: String
            if let error = download.error {
                speedOrError = error
            } else if download.state == .active {
                speedOrError = ByteFormatting.rate(download.bytesPerSecond)
            } else {
                speedOrError = "-"
            }
            return [String(download.id.rawValue.prefix(8)), download.state.rawValue, done, size, speedOrError, download.destination ?? download.url]
        }
        // Every column but the last two is padded; the error and the path may be long.
        var widths = header.map(\.count)
        for row in rows {
            for (i, cell) in row.enumerated() where i < 4 { widths[i] = max(widths[i], cell.count) }
        }
        widths[4] = max(widths[4], rows.map { $0[4].count }.max() ?? 0)
        if !fullErrors { widths[4] = min(widths[4], 40) }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in
                guard i < 5 else { return cell }
                let text = i == 4 && cell.count > widths[4] ? String(cell.prefix(widths[4] - 1)) + "…" : cell
                return text.padding(toLength: widths[i], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        return [line(header)] + rows.map(line)
    }
}

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
/// printing one line per download; exits with the first failure's status.
private func forEachDownload(
    _ ids: [String], global: GlobalOptions, verb: String,
    _ action: @escaping (DownloadManager, Download) async throws -> Download
) async throws {
    let console = Console(quiet: global.quiet)
    let status = try await withManager(global, console: console) { manager, downloads in
        var status = ExitStatus.success
        for text in ids {
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
                    console.result("\(verb) \(id.rawValue.prefix(8)) \(download.url)")
                }
            } catch let error as SwoopError {
                console.error(error.userMessage)
                if status == ExitStatus.success { status = ExitStatus.code(for: error) }
            }
        }
        return status
    }
    if status != ExitStatus.success { throw ExitCode(status) }
}

/// `swoop pause ID…`
struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause", abstract: "Pause downloads (a waiting one will not start until resumed)."
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
        commandName: "rm", abstract: "Forget downloads; with --delete-file also delete their part or final files."
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
        try await forEachDownload(ids, global: global, verb: "removed") { [deleteFile] manager, download in
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
        abstract: "Continue unfinished downloads (all of them, in their saved order, or the ones named)."
    )

    @Argument(help: "Download ids (or unique prefixes); none means every waiting, paused or interrupted download.")
    var ids: [String] = []

    @Flag(help: "Without ids: retry the failed downloads too.")
    var failed = false

    @Flag(help: "Without ids: every unfinished download, failed ones included (as --failed).")
    var all = false

    @OptionGroup var transfer: TransferOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if !ids.isEmpty && (failed || all) { throw ValidationError("--failed and --all are for a resume without ids") }
    }

    func run() async throws {
        let console = Console(quiet: global.quiet)
        if transfer.insecure {
            console.warning("TLS certificate verification is OFF (--insecure): anyone on the path can read and change this download")
        }
        // Failed downloads do not come back on every bare resume: they are retried when asked.
        var states: Set<Download.State> = [.waiting, .paused, .active]
        if failed || all { states.insert(.failed) }
        try await DownloadSession(global: global, transfer: transfer, console: console).run(.resume(ids.isEmpty ? nil : ids, states: states))
    }
}
