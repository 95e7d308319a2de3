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
            with # are skipped; a file name may follow the URL after spaces: `https://host/a.iso  my.iso`.
            """
    )

    @Argument(help: "http or https URLs to download.")
    var urls: [String] = []

    @Option(name: [.customShort("i"), .customLong("input-file")], help: ArgumentHelp("Read URLs from this file (- for stdin).", valueName: "file"))
    var inputFile: String?

    @Option(name: .shortAndLong, help: "Write to this file (one URL only).")
    var output: String?

    @Option(name: [.customShort("d"), .customLong("dir")], help: "Directory to download into.")
    var directory: String = "."

    @Flag(help: "Replace an existing file of the same name.")
    var overwrite = false

    @Flag(help: "Fail if the file already exists (instead of picking name.1.ext).")
    var noClobber = false

    @Option(help: ArgumentHelp("Verify the finished file: sha-256=HEX, sha-1=HEX or md5=HEX.", valueName: "algo=hex"))
    var checksum: String?

    @Option(help: "Priority of these downloads in the queue (higher first).")
    var priority: Int = 0

    @OptionGroup var transfer: TransferOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if urls.isEmpty && inputFile == nil { throw ValidationError("give at least one URL, or -i FILE") }
        if output != nil && (urls.count > 1 || inputFile != nil) { throw ValidationError("-o/--output takes one URL; use -d for several") }
        if checksum != nil && (urls.count > 1 || inputFile != nil) { throw ValidationError("--checksum takes one URL") }
        if overwrite && noClobber { throw ValidationError("--overwrite and --no-clobber contradict each other") }
    }

    func run() async throws {
        let console = Console(quiet: global.quiet)
        let requests: [DownloadRequest]
        do {
            requests = try makeRequests()
        } catch let error as SwoopError {
            throw error.exit(on: console)
        }
        if transfer.insecure {
            console.warning("TLS certificate verification is OFF (--insecure): anyone on the path can read and change this download")
        }
        try await DownloadSession(global: global, transfer: transfer, console: console).run(.add(requests))
    }

    private func makeRequests() throws -> [DownloadRequest] {
        let checksum = try checksum.map { try Checksum(parsing: $0) }
        let headers = try transfer.parsedHeaders()
        var entries = urls.map { URLList.Entry(url: $0, fileName: nil, line: 0) }
        if let inputFile { entries += try Self.readList(inputFile) }
        // Resolved once (the current directory and its symlinks), not once per URL of a long list.
        let base = DownloadRequest.absolute(self.directory)
        return try entries.map { entry in
            var directory = base
            var fileName = entry.fileName
            if let output {
                let path = (output as NSString).expandingTildeInPath
                let dir = (path as NSString).deletingLastPathComponent
                if !dir.isEmpty { directory = path.hasPrefix("/") ? dir : (base as NSString).appendingPathComponent(dir) }
                fileName = (path as NSString).lastPathComponent
            }
            var request: DownloadRequest
            do {
                request = try DownloadRequest(url: entry.url, directory: directory, fileName: fileName)
            } catch let error as SwoopError where entry.line > 0 {
                throw SwoopError(error.code, "\(inputFile ?? "-"):\(entry.line): \(error.message)")
            }
            request.checksum = checksum
            request.headers = headers
            request.priority = priority
            request.collisionPolicy = overwrite ? .overwrite : (noClobber ? .fail : .rename)
            return request
        }
    }

    private static func readList(_ path: String) throws -> [URLList.Entry] {
        let data: Data
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: (path as NSString).expandingTildeInPath) else {
                throw SwoopError(.fileSystem, "cannot read input file \(path)")
            }
            data = contents
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw SwoopError(.invalidArgument, "input file \(path) is not UTF-8 text")
        }
        return URLList.parse(text)
    }
}
