import ArgumentParser
import Foundation
import SwoopConsole
import SwoopKit
import SwoopRPC

/// `swoop add URL…`: queue downloads and return at once.
struct AddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Queue downloads and return at once: the daemon on this state directory starts them; without one they wait for `swoop resume` or a daemon.",
        discussion: "Takes what `swoop get` takes. Prints one line per download: its id and URL."
    )

    @OptionGroup var request: RequestOptions
    @OptionGroup var transfer: TransferOptions
    @OptionGroup var fleet: FleetOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let console = Console(quiet: global.quiet)
        if fleet.store != nil {
            // Into the fleet's queue, for whichever daemon has room.
            if let directory = request.directory, !directory.hasPrefix("/") {
                // This machine's working directory means nothing to the daemon that will run it.
                throw SwoopError(.invalidArgument, "with --store, -d is a path on the daemons' machines: give it absolute (got \(directory))").exit(on: console)
            }
            do {
                let prepared = try request.prepared(transfer: transfer, console: console, makeDirectory: false)
                let (requests, badLines) = (prepared.requests, prepared.badLines)
                if let catalogue = try await fleet.catalogue() {
                    try await withCatalogue(catalogue) { catalogue in
                        try await FleetActions.add(
                            requests, directoryGiven: request.directory != nil, output: request.output, to: catalogue, console: console, json: global.json
                        )
                    }
                }
                if let bad = badLines.first { throw ExitCode(ExitStatus.code(for: bad)) }
                return
            } catch let error as SwoopError {
                throw error.exit(on: console)
            }
        }
        let daemon = DaemonClient.find(global)
        if daemon != nil, let unsupported = daemonUnsupported.first {
            throw SwoopError(.invalidArgument, "\(unsupported) is not taken through the daemon running on \(global.stateDirectory)").exit(on: console)
        }
        // A bad line of a list is reported and skipped; the rest go on, and the exit status says so.
        let prepared = try request.prepared(transfer: transfer, console: console, makeDirectory: daemon == nil)
        let (requests, badLines) = (prepared.requests, prepared.badLines)
        var status = badLines.first.map(ExitStatus.code(for:)) ?? ExitStatus.success
        if let daemon {
            for request in requests {
                do {
                    let uris = JSONValue.array(([request.url] + request.mirrors).map { .string($0.absoluteString) })
                    var options = Aria2Options.json(for: request)
                    if self.request.directory == nil {
                        // No -d: the daemon's own directory, and -o relative to it.
                        options["dir"] = nil
                        if let output = self.request.output { options["out"] = .string(output) }
                    }
                    let gid = try await daemon.call("aria2.addUri", [uris, .object(options)])
                    report(id: gid.string ?? "", request, console: console)
                } catch let error as SwoopError {
                    console.error("\(request.url.absoluteString): \(error.userMessage)")
                    if status == ExitStatus.success { status = ExitStatus.code(for: error) }
                }
            }
        } else {
            do {
                let ids = try await withManager(global, console: console) { manager in try await manager.add(contentsOf: requests) }
                for (id, request) in zip(ids, requests) { report(id: id.rawValue, request, console: console) }
            } catch let error as SwoopError {
                throw error.exit(on: console)
            }
            if !requests.isEmpty {
                console.notice("no swoop daemon runs on \(global.stateDirectory): `swoop resume` (or `swoop daemon`) starts them")
            }
        }
        if status != ExitStatus.success { throw ExitCode(status) }
    }

    /// The options a daemon's `addUri` has no name for (aria2 has none): refused rather than ignored.
    private var daemonUnsupported: [String] {
        var names: [String] = []
        if request.priority != 0 { names.append("--priority") }
        if request.refresh { names.append("--refresh") }
        if transfer.trustMirrorLength { names.append("--trust-mirror-length") }
        if transfer.proxy.noproxy != nil { names.append("--noproxy") }
        if transfer.proxy.noProxyEnv { names.append("--no-proxy-env") }
        return names
    }

    private func report(id: String, _ request: DownloadRequest, console: Console) {
        if global.json {
            console.result(String(decoding: JSONValue.object(["id": .string(id), "url": .string(request.url.absoluteString)]).serialized(), as: UTF8.self))
        } else {
            console.result("added \(id.prefix(8)) \(request.url.absoluteString)")
        }
    }
}

