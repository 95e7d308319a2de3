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

    @Option(help: ArgumentHelp(
        "Only downloads in these states (comma-separated): \(Download.State.allCases.map(\.rawValue).joined(separator: ", ")).",
        valueName: "states"
    ))
    var state: String?

    @Flag(help: "List the part files (*.swoop) in the download directories that no download owns instead.")
    var orphans = false

    @Flag(help: "Show errors in full instead of cut to the column.")
    var long = false

    @Argument(help: "Download ids (or unique prefixes): show these in full, one field a line.")
    var ids: [String] = []

    @OptionGroup var fleet: FleetOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if fleet.store != nil, orphans {
            throw ValidationError("--orphans looks for part files on this machine; a fleet's part files are on its nodes (run it there, without --store)")
        }
    }

    func run() async throws {
        let console = Console(quiet: global.quiet)
        do {
            let states = try state.map(Self.parseStates)
            if let catalogue = try await fleet.catalogue() {
                try await withCatalogue(catalogue) { try await FleetActions.list($0, states: states, ids: ids, json: global.json, console: console) }
                return
            }
            // A state directory with no database holds no downloads: looking is no reason to make
            // one (a mistyped --state-dir would be left behind).
            let made = global.hasStore
            if !made {
                if let id = ids.first { throw SwoopError(.notFound, "no download with id \(id): \(global.noStore)") }
                console.notice(global.noStore)
            }
            let store = made ? try global.openStore() : nil
            defer { try? store?.close() }
            let records = try store?.all() ?? []
            if orphans {
                let paths = DownloadManager.orphanedPartFiles(records)
                if global.json {
                    console.result(try JSONOutput.line(paths))
                } else if paths.isEmpty {
                    console.result("no orphaned part files in the download directories Swoop knows")
                } else {
                    console.result(paths.joined(separator: "\n"))
                }
                return
            }
            let locks = made ? try? global.lockDirectory() : nil
            var downloads = records.map { record in
                var snapshot = record.snapshot(bytesPerSecond: record.state == .active ? record.bytesPerSecond : 0)
                // `active` with no process holding it: its process died; it continues on the next
                // resume (which records it). Shown as it is.
                if record.state == .active, let locks, !record.isLocked(in: locks) {
                    (snapshot.state, snapshot.bytesPerSecond) = (.interrupted, 0)
                }
                return snapshot
            }.filter { states?.contains($0.state) ?? true }
            if !ids.isEmpty {
                let chosen = try ids.map { try DownloadLookup.resolve($0, in: downloads) }
                downloads = chosen.compactMap { id in downloads.first { $0.id == id } }
                if !global.json {
                    let byID = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
                    let details = downloads.map { DownloadTable.details($0, record: byID[$0.id]) }
                    console.result(details.joined(separator: "\n\n"))
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
    /// One download in full, one field a line (`swoop ls ID`), with what is stored of how it was
    /// asked for (`record`).
    static func details(_ download: Download, record: DownloadRecord? = nil) -> String {
        let size = download.totalBytes.map { ByteFormatting.sizeAndCount($0, countInParentheses: true) } ?? "unknown"
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
        if let record {
            let options = settings(record.settings)
                + (record.collisionPolicy == .rename ? [] : ["\(record.collisionPolicy == .overwrite ? "overwrite" : "no-clobber")"])
                + (record.checksum.map { ["checksum \($0)"] } ?? [])
                + (record.headers.isEmpty ? [] : ["header\(record.headers.count == 1 ? "" : "s") " + record.headers.map(\.name).joined(separator: ", ")])
            if !options.isEmpty { lines.append("options: " + options.joined(separator: ", ")) }
            if !record.mirrors.isEmpty { lines.append("mirrors: " + record.mirrors.joined(separator: ", ")) }
        }
        return lines.joined(separator: "\n")
    }

    /// The settings a download has of its own, as the options that set them (`connections 4`).
    static func settings(_ settings: DownloadSettings) -> [String] {
        var result: [String] = []
        if let value = settings.maxConnections { result.append("connections \(value)") }
        if let value = settings.minSplitSize { result.append("min-split-size \(ByteFormatting.format(value))") }
        if let value = settings.bytesPerSecond { result.append("limit-rate " + (value == 0 ? "none" : ByteFormatting.rate(Double(value)))) }
        if let value = settings.maxRetries { result.append("retries \(value)") }
        if let value = settings.retryWait { result.append("retry-wait \(seconds(value))") }
        if let value = settings.connectTimeout { result.append("connect-timeout \(seconds(value))") }
        if let value = settings.idleTimeout { result.append("timeout \(seconds(value))") }
        if let value = settings.proxy { result.append("proxy " + (value.isEmpty ? "none" : ProxySettings.masked(value))) }
        if let value = settings.noProxy { result.append("noproxy \(value)") }
        if settings.useProxyEnvironment == false { result.append("no-proxy-env") }
        return result
    }

    private static func seconds(_ value: Double) -> String {
        // Int(exactly:): a stored value may be anything (1e308 trapped `Int(_:)`).
        Int(exactly: value).map { "\($0)s" } ?? "\(value)s"
    }

    /// An error for the 40 columns of the table: without the download's URL, which the row shows
    /// (or its path does), so that what went wrong fits ("sha-256 mismatch: expected …, got …"
    /// rather than "sha-256 mismatch for http://…"). `--long` and `ls ID` show it whole.
    static func shortError(_ error: String, url: String) -> String {
        guard !url.isEmpty else { return error }
        for joint in [" for ", " from "] {
            // The URL whole: not the start of a longer one (a mirror's).
            guard let range = error.range(of: joint + url),
                range.upperBound == error.endIndex || [":", ",", " ", ")"].contains(error[range.upperBound])
            else { continue }
            return error.replacingCharacters(in: range, with: "")
        }
        return error
    }

    /// - Parameter fullErrors: Errors in full (`--long`) rather than cut to 40 columns.
    static func render(_ downloads: [Download], fullErrors: Bool = false) -> [String] {
        let header = ["ID", "STATE", "DONE", "SIZE", "SPEED/ERROR", "PATH"]
        let rows = downloads.map { download -> [String] in
            let done = download.fractionCompleted.map { String(format: "%.1f%%", $0 * 100) } ?? ByteFormatting.format(download.completedBytes)
            let size = download.totalBytes.map(ByteFormatting.format) ?? "?"
            let speedOrError: String
            if let error = download.error {
                speedOrError = fullErrors ? error : shortError(error, url: download.url)
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

