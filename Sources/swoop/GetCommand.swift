import ArgumentParser
import Foundation
import SwoopConsole
import SwoopKit

struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Download URLs to files, resuming whatever an earlier run left unfinished.",
        discussion: """
            -i FILE reads one URL per line (`-` reads standard input). Blank lines and lines starting \
            with # are skipped; a file name may follow the URL after spaces: `https://host/a.iso  my.iso`. \
            URLs separated by TABs on one line are one file's mirrors (a name may follow as the last field).
            """
    )

    @Flag(name: [.customShort("c"), .customLong("continue")], help: "Accepted as wget and curl take it: Swoop always continues.")
    var continueDownloads = false

    @Flag(name: [.customShort("L"), .customLong("location")], help: "Accepted as curl takes it: redirects are always followed.")
    var followRedirects = false

    @OptionGroup var request: RequestOptions
    @OptionGroup var transfer: TransferOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let console = Console(quiet: global.quiet)
        // A bad line of a list is reported and skipped; the rest go on, and the exit status says so.
        var prepared = try request.prepared(transfer: transfer, console: console)
        if prepared.requests.isEmpty, let first = prepared.badLines.first { throw ExitCode(ExitStatus.code(for: first)) }
        if prepared.requests.isEmpty {
            // A list with nothing but comments and blank lines, as wget says.
            throw SwoopError(.invalidArgument, "no URLs found in \(request.inputFile ?? "the input")").exit(on: console)
        }
        if transfer.insecure {
            console.warning("TLS certificate verification is OFF (--insecure): anyone on the path can read and change this download")
        }
        let session = DownloadSession(global: global, transfer: transfer, console: console, skipped: prepared.badLines)
        // The requests are the manager's once added: a list of thousands of URLs is not kept twice.
        let requests = prepared.requests
        prepared.requests = []
        try await session.run(.add(consume requests, origins: prepared.origins))
    }
}
