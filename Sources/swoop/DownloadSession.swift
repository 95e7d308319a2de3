import ArgumentParser
import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import SwoopConsole
import SwoopKit
import SwoopStore

#if canImport(Glibc)
import Glibc
#endif

/// Runs downloads for `get` and `resume`: opens the store, starts the manager, shows progress and
/// results, stops cleanly on SIGINT/SIGTERM, and turns the outcome into an exit status.
struct DownloadSession {
    let global: GlobalOptions
    let transfer: TransferOptions
    let console: Console
    /// Lines of an `-i` list that were reported and skipped: the summary counts them apart from the
    /// downloads, and the exit status is the first one's (they were reported before any download).
    var skipped: [SwoopError] = []

    /// What to run once the manager is up.
    enum Work {
        /// Queue these requests (re-adding known ones continues them); those of an `-i` list with
        /// their lines.
        case add([DownloadRequest], origins: ListOrigins = ListOrigins())
        /// Resume these ids, or every unfinished download in `states` when `nil`; the one id from
        /// `url` when given.
        case resume([String]?, states: Set<Download.State>, url: String? = nil)
    }

    private struct Failure {
        var download: Download
        var error: SwoopError
    }

    func run(_ work: consuming Work) async throws {
        if case .resume(let prefixes, _, _) = work, !global.hasStore {
            // Nothing was ever downloaded with this state directory: none is made for it (a
            // mistyped --state-dir would be left behind).
            guard let prefix = prefixes?.first else { return console.notice("nothing to resume: \(global.noStore)") }
            throw SwoopError(.notFound, "no download with id \(prefix): \(global.noStore)").exit(on: console)
        }
        let manager: DownloadManager
        do {
            // Credentials first: a missing file is reported before the state directory is created.
            let credentials = try transfer.credentials(warn: console.warning)
            let store = try global.openStore()
            var configuration = try transfer.configuration(lockDirectory: try global.lockDirectory())
            configuration.credentials = credentials
            manager = try DownloadManager(configuration: configuration, store: store)
        } catch let error as SwoopError {
            throw error.exit(on: console)
        }
        // What the result lines need: how each download ended, and when it started (for the time
        // a text line shows; not under -q or --json, which print no such line).
        let timesStarts = !global.json && !console.quiet
        // Whether a download started transferring here: a run that only waited for another swoop
        // (or was stopped while adding) saved no progress of its own. Noted as the events pass,
        // under -q and --json too, which take no `started` event.
        let startedHere = NIOLockedValueBox(false)
        let events = manager.events { event in
            if case .started = event {
                startedHere.withLockedValue { $0 = true }
                return timesStarts
            }
            return event.isTerminal
        }
        let display = BoardPrinter(console: console)
        // With --json, standard output holds only JSON: no board, no progress lines. With -q the
        // board, progress lines, notices and JSON progress are not shown: no subscription buffers
        // events for them.
        let (json, jsonProgress) = (global.json, transfer.progress)
        let progressEvents = console.quiet || (json && !jsonProgress) ? nil : manager.events()
        let printer = Task {
            guard let progressEvents else { return }
            if json {
                await JSONProgress(console: console).consume(progressEvents)
            } else {
                await display.consume(progressEvents)
            }
        }
        // The library's life cycle (reconcile, run, drain and save, shut down) in a service group
        // of its own. The signals are ours: the exit status names the one that came, and a second
        // Ctrl-C exits at once.
        let service = DownloadService(manager: manager)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup, serviceName: "downloads")],
                logger: Logger(label: "swoop", factory: { _ in SwiftLogNoOpLogHandler() })
            )
        )
        let runner = Task { try await group.run() }
        // What is saved is what the last checkpoints saved: a few seconds' bytes at most are fetched
        // again. Written as it is, not through the console, whose lock a write blocked on stderr may
        // hold: nothing may keep this exit from happening. On a terminal it starts a line of its own.
        let lastWords = (console.isTerminal ? "\n" : "")
            + "swoop: stopped at once by Ctrl-C during the shutdown. Run `\(resumeCommand)` (or the same command) to continue.\n"
        let interruption = Interruption { _ = Array(lastWords.utf8).withUnsafeBytes { WriteAll.write(STDERR_FILENO, $0) } }
        interruption.onSignal { Task { await group.triggerGracefulShutdown() } }

        var status = ExitStatus.success
        do {
            let report = try await service.reconciled()
            reportPublished(report.published.count)
            let bareResume: Set<Download.State>? = if case .resume(nil, let states, _) = work { states } else { nil }
            // The requests are the manager's now: a list of thousands of URLs is not kept twice.
            let (ids, origins) = try await start(consume work, manager: manager)
            if ids.count >= Self.trimAfter { Self.returnFreedMemory() }
            // Resumed downloads get no `added` event: the board counts them waiting until they start.
            display.expect(ids)
            if ids.isEmpty {
                console.notice("nothing to resume" + (try await leftOut(states: bareResume, manager: manager)))
            } else {
                status = await follow(events, pending: Set(ids), origins: origins, interrupted: { interruption.received != nil })
            }
        } catch let error as SwoopError {
            // A signal during start-up shuts the manager down under `add`: that is no error of its own.
            if interruption.received == nil {
                console.error(error.userMessage)
                status = ExitStatus.code(for: error)
            }
        } catch {
            console.error("\(error)")
            status = ExitStatus.failure
        }
        await group.triggerGracefulShutdown()
        try? await runner.value
        await printer.value
        interruption.stop()
        if let signal = interruption.received {
            let how = signal == SIGTERM ? "terminated" : "interrupted"
            let saved = startedHere.withLockedValue { $0 } ? "; progress saved." : " before any download started here."
            console.notice("\(how)\(saved) Run `\(resumeCommand)` (or the same command) to continue.")
            throw ExitCode(signal == SIGTERM ? ExitStatus.terminated : ExitStatus.interrupted)
        }
        if status != ExitStatus.success { throw ExitCode(status) }
    }

    /// This run's ``resumeCommand(stateDir:)``, for its hints.
    private var resumeCommand: String { Self.resumeCommand(stateDir: global.stateDir.map { _ in global.stateDirectory }) }

    /// The command that resumes what this one left, with the state directory it was given (a bare
    /// `swoop resume` would look in the default one and find nothing).
    static func resumeCommand(stateDir: String?) -> String {
        guard var stateDir else { return "swoop resume" }
        // Absolute, so that the hint works from any directory it is pasted in.
        if !stateDir.hasPrefix("/") { stateDir = (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(stateDir) }
        let plain = stateDir.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || "/._-+,:@".unicodeScalars.contains($0) }
        return "swoop resume --state-dir " + (plain ? stateDir : "'" + stateDir.replacingOccurrences(of: "'", with: "'\\''") + "'")
    }

    /// Adds or resumes what `work` names; returns the ids, each once, and the `list.txt:37: ` of
    /// those from an `-i` list.
    private func start(_ work: Work, manager: DownloadManager) async throws -> ([Download.ID], origins: [Download.ID: String]) {
        switch work {
        case .add(let requests, let origins):
            let ids = try await manager.add(contentsOf: requests)
            var seen = Set<Download.ID>()
            return (ids.filter { seen.insert($0).inserted }, origins.prefixes(for: ids))
        case .resume(nil, let states, _):
            // -H given to resume replaces the stored headers of the same name (a fresh token); the
            // settings given replace the stored ones, and are stored.
            return (try await manager.resumeAll(replacingHeaders: try transfer.parsedHeaders(), settings: try transfer.settings(), states: states), [:])
        case .resume(let prefixes?, _, let url):
            let headers = try transfer.parsedHeaders()
            let settings = try transfer.settings()
            let records = try await manager.downloads()
            var ids: [Download.ID] = []
            for prefix in prefixes {
                let id = try DownloadLookup.resolve(prefix, in: records)
                if let url {
                    try await manager.changeURL(id, to: RequestOptions.withScheme(url, console: console), trustMirrorLength: transfer.trustMirrorLength)
                }
                try await manager.resume(id, replacingHeaders: headers, settings: settings)
                ids.append(id)
            }
            return (ids, [:])
        }
    }

    /// The number of downloads queued at once from which the memory freed after queueing them
    /// (the parsed list, the batch's records) is handed back to the system.
    static let trimAfter = 1000

    /// Hands memory freed by the allocator back to the system. Queueing a list of thousands of URLs
    /// leaves tens of MiB freed on one thread's heap that the transfers, on other threads, would not
    /// reuse.
    static func returnFreedMemory() {
        // glibc's malloc_trim: Swift's Glibc module does not declare <malloc.h>.
        _ = CFunctions.lookUp("malloc_trim", as: (@convention(c) (UInt) -> Int32).self)?(0)
    }

    /// For a bare resume (`states`: the states it resumes) that left paused or failed downloads
    /// out: how many, and how to go on.
    private func leftOut(states: Set<Download.State>?, manager: DownloadManager) async throws -> String {
        guard let states else { return "" }
        var said = ""
        for (state, advice) in [(Download.State.paused, "`swoop resume ID` or `--all` continues"), (.failed, "`swoop resume --failed` retries")]
        where !states.contains(state) {
            let count = try await manager.downloads(matching: [state]).count
            if count > 0 { said += "; \(count) \(state.rawValue) (\(advice) \(count == 1 ? "it" : "them"))" }
        }
        return said
    }

    /// Prints each download's result as it ends; returns the exit status once all have ended (or
    /// the manager stopped).
    private func follow(
        _ events: DownloadEvents, pending: Set<Download.ID>, origins: [Download.ID: String], interrupted: () -> Bool
    ) async -> Int32 {
        var pending = pending
        let total = pending.count
        var done = 0
        var failures: [Failure] = []
        // Paused or removed by another command: not failed, but not there either.
        var stopped = 0
        // When each download first started in this run, and from how many bytes: its result line
        // gives the time it took and the average speed.
        var starts: [Download.ID: (at: ContinuousClock.Instant, bytes: Int)] = [:]
        for await event in events {
            if case .started(let download) = event, starts[download.id] == nil {
                starts[download.id] = (.now, download.completedBytes)
            }
            guard event.isTerminal, pending.remove(event.download.id) != nil else { continue }
            let download = event.download
            let started = starts.removeValue(forKey: download.id)
            console.finish(download.id)
            switch event {
            case .completed:
                done += 1
                report(download, "", timing: started.map { Self.timing(of: download, since: $0) } ?? "")
            case .alreadyComplete:
                done += 1
                report(download, " is already complete")
            case .failed(_, let error) where error.code != .cancelled:
                failures.append(Failure(download: download, error: error))
                if global.json { printJSON(download) } else { console.error((origins[download.id] ?? "") + error.userMessage) }
            case .paused, .removed:
                // Interrupted by Ctrl-C: the closing notice says how to go on; otherwise `swoop pause`
                // or `swoop rm` did it, here or in another terminal.
                if !interrupted() { stopped += 1 }
                if global.json {
                    printJSON(download)
                } else if !interrupted() {
                    let name = download.url.isEmpty ? download.id.rawValue : download.url
                    let next = download.state == .paused ? "; `\(resumeCommand) \(download.id.rawValue.prefix(8))` continues it" : ""
                    console.notice("\(name) was \(download.state.rawValue)\(next)")
                }
            default:
                break
            }
            if pending.isEmpty { break }
        }
        if total + skipped.count > 1 && pending.isEmpty && !global.json {
            if failures.isEmpty && skipped.isEmpty {
                console.notice("\(done) of \(total) downloads complete")
            } else {
                console.error(Self.summary(done: done, of: total, failed: failures.count, skippedLines: skipped.count) + ":")
                for line in skipped { console.error("  " + line.userMessage) }
                for failure in failures {
                    // Messages name their URL; the few that name a path instead get the URL first.
                    let url = failure.download.url
                    let message = failure.error.userMessage
                    let origin = origins[failure.download.id] ?? ""
                    console.error("  " + origin + (url.isEmpty || message.contains(url) ? message : "\(url): \(message)"))
                }
            }
        }
        if let first = skipped.first ?? failures.first?.error { return ExitStatus.code(for: first) }
        if stopped > 0 && global.quiet && !global.json {
            // -q hid each one's line: the exit status is not left to say it alone.
            console.warning("\(stopped) download\(stopped == 1 ? " was" : "s were") paused or removed by another command")
        }
        return stopped > 0 ? ExitStatus.stopped : ExitStatus.success
    }

    /// The closing line's count: `1190 of 1192 downloads complete, 2 failed; 8 lines of the list
    /// skipped` (a bad line of a list is no download).
    static func summary(done: Int, of total: Int, failed: Int, skippedLines: Int) -> String {
        var said = "\(done) of \(total) download\(total == 1 ? "" : "s") complete"
        if failed > 0 { said += ", \(failed) failed" }
        if skippedLines > 0 { said += "; \(skippedLines) line\(skippedLines == 1 ? "" : "s") of the list skipped" }
        return said
    }

    private func report(_ download: Download, _ suffix: String, timing: String = "") {
        if global.json { return printJSON(download) }
        let size = download.totalBytes ?? download.completedBytes
        let path = download.destination ?? download.url
        console.result("\(path)\(suffix) (\(ByteFormatting.sizeAndCount(size)))\(timing)")
    }

    /// ` in 2.3s at 1.95 MiB/s` for a download that took a second or more (a quicker one's line
    /// stays short, as it printed no progress either); one that continued earlier bytes adds how
    /// much of it this run fetched (`, 1.43 MiB of it this run`): the time and speed are this run's.
    static func timing(of download: Download, since start: (at: ContinuousClock.Instant, bytes: Int)) -> String {
        let elapsed = ContinuousClock.now - start.at
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        guard seconds >= 1 else { return "" }
        let bytes = max(0, (download.totalBytes ?? download.completedBytes) - start.bytes)
        let thisRun = start.bytes > 0 ? ", \(ByteFormatting.format(bytes)) of it this run" : ""
        return " in \(ByteFormatting.delay(seconds)) at \(ByteFormatting.rate(Double(bytes) / seconds))\(thisRun)"
    }

    private func printJSON(_ download: Download) {
        guard let line = try? JSONOutput.line(download) else { return }
        console.result(line)
    }

    private func reportPublished(_ count: Int) {
        guard count > 0 else { return }
        let downloads = count == 1 ? "1 completed download" : "\(count) completed downloads"
        console.notice("renamed \(downloads) that an earlier run stopped before renaming")
    }
}

/// `--json --progress`: each running download's snapshot as one JSON object on stdout, when it
/// starts and then at most once a second.
struct JSONProgress {
    let console: Console

    func consume(_ events: DownloadEvents) async {
        var last: [Download.ID: ContinuousClock.Instant] = [:]
        for await event in events {
            switch event {
            case .started(let download), .progress(let download):
                let now = ContinuousClock.now
                if let previous = last[download.id], now - previous < .seconds(1) { continue }
                last[download.id] = now
                guard let line = try? JSONOutput.line(download) else { continue }
                console.result(line)
            default:
                if event.isTerminal { last[event.download.id] = nil }
            }
        }
    }
}

/// JSON output settings shared by the commands.
enum JSONOutput {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// One value as one line of JSON.
    static func line(_ value: some Encodable) throws -> String {
        String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// Finds downloads by id or unique id prefix, as `git` finds commits.
enum DownloadLookup {
    /// The download `text` names (its id or a unique prefix), with the CLI's advice when none does.
    static func resolve(_ text: String, in downloads: [Download]) throws -> Download.ID {
        do {
            return try Download.ID.resolve(text, among: downloads.map(\.id))
        } catch let error as SwoopError where error.code == .notFound {
            throw SwoopError(.notFound, error.message + " (see `swoop ls`)")
        }
    }
}
