import ArgumentParser
import Foundation
import SwoopConsole
import SwoopKit
import SwoopPostgres
import SwoopRPC

/// `swoop nodes --store URL`: the daemons of a fleet, as they last reported themselves.
struct NodesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nodes",
        abstract: "List the daemons of a fleet (--store): name, address, downloads running, speed, last heartbeat."
    )

    @Option(help: ArgumentHelp("The daemons' --lease: a node silent longer is shown as dead.", valueName: "seconds"))
    var lease: Double = 15

    @OptionGroup var fleet: FleetOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if fleet.store == nil { throw ValidationError("give the fleet's --store postgres://USER@HOST/DB") }
        if !(lease > 0) { throw ValidationError("--lease must be more than 0 seconds") }
    }

    func run() async throws {
        let console = Console(quiet: global.quiet)
        do {
            guard let catalogue = try await fleet.catalogue() else { return }
            let nodes = try await withCatalogue(catalogue) { try await $0.nodes() }
            if global.json {
                let values: [JSONValue] = nodes.map { node in
                    .object([
                        "name": .string(node.name), "address": .string(node.address), "active": .string("\(node.activeDownloads)"),
                        "bytesPerSecond": .string("\(Int(node.bytesPerSecond))"), "silentFor": .string(String(format: "%.1f", node.silentFor)),
                    ])
                }
                console.result(String(decoding: JSONValue.array(values).serialized(), as: UTF8.self))
            } else if nodes.isEmpty {
                console.result("no daemon is in this fleet now")
            } else {
                console.result(FleetTable.nodes(nodes, silence: lease).joined(separator: "\n"))
            }
        } catch let error as SwoopError {
            throw error.exit(on: console)
        }
    }
}

/// What `add`, `ls`, `pause`, `resume` and `rm` do with `--store`: the same, on the fleet's queue.
enum FleetActions {
    /// Adds the requests to the fleet's queue. Without `-d`, each node's own download directory.
    static func add(_ requests: [DownloadRequest], directoryGiven: Bool, output: String?, to catalogue: PostgresCatalogue, console: Console, json: Bool) async throws {
        let items = requests.map { request in
            var options = Aria2Options.json(for: request)
            if !directoryGiven {
                options["dir"] = nil
                if let output { options["out"] = .string(output) }
            }
            return CatalogueItem(
                urls: ([request.url] + request.mirrors).map(\.absoluteString), options: String(decoding: JSONValue.object(options).serialized(), as: UTF8.self),
                priority: request.priority, paused: request.paused
            )
        }
        try await catalogue.add(items)
        for item in items {
            if json {
                console.result(String(decoding: JSONValue.object(["id": .string(item.id.rawValue), "url": .string(item.urls[0])]).serialized(), as: UTF8.self))
            } else {
                console.result("added \(item.id.rawValue.prefix(8)) \(item.urls[0]) to the fleet's queue")
            }
        }
    }

    /// Lists the fleet's downloads (in `states`, or all), in queue order: a table, or one JSON
    /// array. With `ids`, those downloads in full (one field a line), or their JSON.
    static func list(_ catalogue: PostgresCatalogue, states: Set<Download.State>?, ids: [String], json: Bool, console: Console) async throws {
        let entries: [CatalogueEntry]
        if ids.isEmpty {
            entries = try await catalogue.allEntries(in: states)
        } else {
            entries = try await catalogue.entries(ids: try await resolveFleetIDs(ids, in: catalogue)).filter { states?.contains($0.state) ?? true }
        }
        if json {
            console.result(try JSONOutput.line(entries.map(FleetListing.init)))
        } else if ids.isEmpty {
            console.result(entries.isEmpty ? "no downloads in the fleet" : FleetTable.downloads(entries).joined(separator: "\n"))
        } else {
            var shown: [String] = []
            for entry in entries { shown.append(FleetTable.details(entry, parts: try await catalogue.parts(of: entry.id))) }
            console.result(shown.joined(separator: "\n\n"))
        }
    }

    /// `rm --store`: removes downloads wherever they run, and forgets them once stopped (a running
    /// one as soon as its node stopped it, waited for up to `wait`). One line each.
    static func remove(ids: [String], in catalogue: PostgresCatalogue, console: Console, wait: Duration = .seconds(10)) async throws {
        let resolved = try await resolveFleetIDs(ids, in: catalogue)
        let effects = try await catalogue.control(.remove, ids: resolved)
        let forgotten = try await catalogue.forgetOnceStopped(resolved.filter { effects[$0] != .notFound }, within: wait)
        var failed: SwoopError?
        for id in resolved {
            let short = id.rawValue.prefix(8)
            switch (effects[id] ?? .notFound, forgotten[id]) {
            case (.notFound, _), (_, .notFound?):
                console.error("no download \(id) in the fleet")
                failed = failed ?? SwoopError(.notFound, "")
            case (_, .done?):
                console.result("\(short): removed")
            case (_, .refused(.active, let node)?):
                console.result("\(short): asked \(node ?? "its node"), which runs it, to remove it; still stopping there (`swoop rm --store … \(short)` again forgets it)")
            case (_, .refused(let state, _)?):
                console.error("\(short) is \(state.rawValue): it cannot be removed")
                failed = failed ?? SwoopError(.invalidArgument, "")
            case (_, .moved?), (_, nil):
                console.error("\(short) could not be removed")
                failed = failed ?? SwoopError(.store, "")
            }
        }
        if let failed { throw ExitCode(ExitStatus.code(for: failed)) }
    }

    /// `rm --failed --completed --store`: forgets every such download of the fleet (their files stay).
    static func forget(_ states: Set<Download.State>, in catalogue: PostgresCatalogue, console: Console) async throws {
        let count = try await catalogue.forget(in: states)
        let which = states.map(\.rawValue).sorted().joined(separator: " or ")
        console.result(count == 0 ? "nothing to remove" : "removed \(count) \(which) download\(count == 1 ? "" : "s") from the fleet")
    }

    /// Pauses, resumes or removes downloads of the fleet, wherever they run; one line each.
    static func control(_ control: CatalogueControl, ids: [String], in catalogue: PostgresCatalogue, console: Console) async throws {
        let resolved = try await resolveFleetIDs(ids, in: catalogue)
        let effects = try await catalogue.control(control, ids: resolved)
        var failed: SwoopError?
        for id in resolved {
            let short = id.rawValue.prefix(8)
            switch effects[id] ?? .notFound {
            case .done(let state): console.result("\(short): \(state.rawValue)")
            case .asked(let node): console.result("\(short): asked \(node), which runs it, to \(control.rawValue) it")
            case .unchanged(let state): console.result("\(short): already \(state.rawValue)")
            case .refused(let state):
                console.error("\(short) is \(state.rawValue): it cannot be \(control == .pause ? "paused" : control == .resume ? "resumed" : "removed")")
                failed = failed ?? SwoopError(.invalidArgument, "")
            case .notFound:
                console.error("no download \(id) in the fleet")
                failed = failed ?? SwoopError(.notFound, "")
            }
        }
        if let failed { throw ExitCode(ExitStatus.code(for: failed)) }
    }
}

/// The fleet's tables, pure.
enum FleetTable {
    /// - Parameter silence: A node silent this long (the daemons' lease) is shown as dead, with no
    ///   downloads or speed: its downloads are another's to take.
    static func nodes(_ nodes: [FleetNode], silence: Double) -> [String] {
        let rows = nodes.map { node in
            let live = node.silentFor < silence
            return [
                node.name, node.address.isEmpty ? "-" : node.address, live ? "\(node.activeDownloads)" : "-",
                live ? ByteFormatting.rate(node.bytesPerSecond) : "-",
                live ? String(format: "%.1f s ago", node.silentFor) : "silent \(Int(node.silentFor)) s (taken for dead)",
            ]
        }
        return columns(["NODE", "ADDRESS", "ACTIVE", "SPEED", "LAST HEARTBEAT"], rows)
    }

    /// One download in full, one field a line (`swoop ls --store ID`), with its parts when split.
    static func details(_ entry: CatalogueEntry, parts: [CatalogueEntry]) -> String {
        let size = entry.totalBytes.map { ByteFormatting.sizeAndCount($0, countInParentheses: true) } ?? "unknown"
        var lines = [
            "id:     \(entry.id.rawValue)",
            "url:    \(entry.urls.first ?? "")",
            "state:  \(entry.state.rawValue)",
            "node:   \(entry.node.map { "\($0) (claim \(entry.epoch))" } ?? "(not claimed yet)")",
            "file:   \(entry.fileName.map { name in entry.directory.map { $0 + "/" + name } ?? name } ?? "(not named yet)")",
            "size:   \(size)",
            "done:   \(entry.completedBytes) bytes",
        ]
        if entry.state == .active { lines.append("speed:  \(ByteFormatting.rate(entry.bytesPerSecond))") }
        if let error = entry.error { lines.append("error:  \(error)") }
        if entry.urls.count > 1 { lines.append("mirrors: " + entry.urls.dropFirst().joined(separator: ", ")) }
        if entry.priority != 0 { lines.append("priority: \(entry.priority)") }
        if !parts.isEmpty {
            let states = Dictionary(grouping: parts, by: \.state).map { "\($0.value.count) \($0.key.rawValue)" }.sorted()
            let nodes = Set(parts.filter { $0.state == .active }.compactMap(\.node)).sorted()
            lines.append("parts:  \(parts.count): " + states.joined(separator: ", ") + (nodes.isEmpty ? "" : " (on " + nodes.joined(separator: ", ") + ")"))
        }
        return lines.joined(separator: "\n")
    }

    static func downloads(_ entries: [CatalogueEntry]) -> [String] {
        let rows = entries.map { entry -> [String] in
            let progress: String
            if let total = entry.totalBytes, total > 0 {
                progress = "\(ByteFormatting.format(entry.completedBytes))/\(ByteFormatting.format(total))"
            } else {
                progress = entry.completedBytes > 0 ? ByteFormatting.format(entry.completedBytes) : "-"
            }
            let what = entry.error.map { "\(entry.urls[0]) (\($0))" } ?? entry.fileName.map { "\(entry.urls[0]) → \($0)" } ?? entry.urls[0]
            return [String(entry.id.rawValue.prefix(8)), entry.state.rawValue, entry.node ?? "-", progress, what]
        }
        return columns(["ID", "STATE", "NODE", "PROGRESS", "URL"], rows)
    }

    /// Left-aligned columns, the last one as long as it is.
    static func columns(_ header: [String], _ rows: [[String]]) -> [String] {
        let all = [header] + rows
        let widths = (0..<header.count).map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
    }
}

/// A fleet's download as `ls --store --json` prints it: the keys of `ls --json` where they mean
/// the same, and the fleet's own (node, claim, mirrors, file name).
struct FleetListing: Encodable {
    var id: String
    var url: String
    var mirrors: [String]
    var state: String
    var node: String?
    var claim: Int
    var fileName: String?
    /// Its path on `node` (as `ls --json` names a download's path), once that node said where.
    var destination: String?
    var totalBytes: Int?
    var completedBytes: Int
    var bytesPerSecond: Double
    var error: String?
    var priority: Int

    init(_ entry: CatalogueEntry) {
        (id, url, mirrors, state) = (entry.id.rawValue, entry.urls.first ?? "", Array(entry.urls.dropFirst()), entry.state.rawValue)
        (node, claim, fileName, priority) = (entry.node, entry.epoch, entry.fileName, entry.priority)
        destination = entry.fileName.flatMap { name in entry.directory.map { $0 + "/" + name } }
        (totalBytes, completedBytes, bytesPerSecond, error) = (entry.totalBytes, entry.completedBytes, entry.bytesPerSecond, entry.error)
    }
}
