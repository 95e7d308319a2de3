import ArgumentParser
import Foundation
import SwoopConsole
import SwoopKit
import SwoopStore

#if canImport(Glibc)
import Glibc
#endif

struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Download URLs to files, resuming whatever an earlier run left unfinished."
    )

    @Argument(help: "http or https URLs to download.")
    var urls: [String]

    @Option(name: .shortAndLong, help: "Write to this file (one URL only).")
    var output: String?

    @Option(name: [.customShort("d"), .customLong("dir")], help: "Directory to download into.")
    var directory: String = "."

    @Flag(name: .shortAndLong, help: "Print only errors.")
    var quiet = false

    @Flag(help: "Replace an existing file of the same name.")
    var overwrite = false

    @Flag(help: "Fail if the file already exists (instead of picking name.1.ext).")
    var noClobber = false

    @Option(help: ArgumentHelp("Verify the finished file: sha-256=HEX, sha-1=HEX or md5=HEX.", valueName: "algo=hex"))
    var checksum: String?

    @Option(name: [.customShort("H"), .customLong("header")], help: ArgumentHelp("Extra request header.", valueName: "name: value"))
    var headers: [String] = []

    @Option(help: "The User-Agent header.")
    var userAgent: String?

    @Option(help: "Retries after a transient failure (resets when bytes arrive).")
    var retries: Int = 5

    @Option(help: ArgumentHelp("First retry delay; doubles each retry.", valueName: "seconds"))
    var retryWait: Double = 0.5

    @Option(help: ArgumentHelp("Give up connecting after this long.", valueName: "seconds"))
    var connectTimeout: Double = 30

    @Option(help: ArgumentHelp("Retry when no data arrives for this long (not a total deadline).", valueName: "seconds"))
    var timeout: Double = 60

    @Option(help: "Most redirects to follow.")
    var maxRedirects: Int = 10

    @Flag(help: "Allow a redirect from https to http.")
    var allowInsecureRedirect = false

    @Option(help: ArgumentHelp("Also trust the CA certificates in this PEM file.", valueName: "path"))
    var caCertificate: String?

    @Flag(name: [.customShort("k"), .long], help: "Do not verify TLS certificates (dangerous).")
    var insecure = false

    @Option(help: ArgumentHelp("Where Swoop keeps its state (default $XDG_STATE_HOME/swoop).", valueName: "dir"))
    var stateDir: String?

    func validate() throws {
        if output != nil && urls.count > 1 { throw ValidationError("-o/--output takes one URL; use -d for several") }
        if overwrite && noClobber { throw ValidationError("--overwrite and --no-clobber contradict each other") }
        guard (0...1000).contains(retries) else { throw ValidationError("--retries must be between 0 and 1000") }
        guard (0...100).contains(maxRedirects) else { throw ValidationError("--max-redirects must be between 0 and 100") }
        for value in [retryWait, connectTimeout, timeout] where !(value > 0 && value <= 1_000_000) {
            throw ValidationError("timeouts and waits must be between 0 and 1000000 seconds")
        }
    }

    func run() async throws {
        let console = Console(quiet: quiet)
        let requests: [DownloadRequest]
        let configuration: SwoopKit.Configuration
        do {
            requests = try makeRequests()
            configuration = try makeConfiguration()
        } catch let error as SwoopError {
            console.error(error.message)
            throw ExitCode(ExitStatus.code(for: error))
        }
        if insecure { console.warning("TLS certificate verification is OFF (--insecure): anyone on the path can read and change this download") }

        let stateDirectory = stateDir.map { (($0 as NSString).expandingTildeInPath) } ?? SQLiteDownloadStore.defaultDirectory()
        let manager: DownloadManager
        do {
            let store = try SQLiteDownloadStore(directory: stateDirectory)
            var configuration = configuration
            configuration.lockDirectory = try Self.lockDirectory(in: stateDirectory)
            manager = try DownloadManager(configuration: configuration, store: store)
        } catch let error as SwoopError {
            console.error(error.message)
            throw ExitCode(ExitStatus.code(for: error))
        }

        let progress = ProgressPrinter(console: console)
        let events = manager.events()
        let printer = Task { await progress.consume(events) }
        let interruption = Interruption()
        let work = Task { await Self.runAll(requests, manager: manager, console: console) }
        interruption.onSignal { work.cancel() }
        let status = await work.value
        try? await manager.shutdown()
        await printer.value
        interruption.stop()
        if let signal = interruption.received {
            throw ExitCode(signal == SIGTERM ? ExitStatus.terminated : ExitStatus.interrupted)
        }
        if status != ExitStatus.success { throw ExitCode(status) }
    }

    /// Downloads each request in turn; returns the exit status of the first failure.
    private static func runAll(_ requests: [DownloadRequest], manager: DownloadManager, console: Console) async -> Int32 {
        var status = ExitStatus.success
        for request in requests {
            if Task.isCancelled { break }
            do {
                let outcome = try await manager.download(request)
                let download = outcome.download
                let size = download.totalBytes ?? download.completedBytes
                let path = download.destination ?? request.url.absoluteString
                // Events may still be on their way to the printer: no progress line after the result.
                console.finish(download.id)
                switch outcome {
                case .downloaded:
                    console.result("\(path) (\(ByteFormatting.format(size)), \(size) bytes)")
                case .alreadyComplete:
                    console.result("\(path) is already complete (\(ByteFormatting.format(size)), \(size) bytes)")
                }
            } catch let error as SwoopError {
                if error.code == .cancelled {
                    console.notice("interrupted; progress saved. Run the same command again to continue.")
                    return ExitStatus.interrupted
                }
                console.error(error.message)
                if status == ExitStatus.success { status = ExitStatus.code(for: error) }
            } catch {
                console.error("\(error)")
                if status == ExitStatus.success { status = ExitStatus.failure }
            }
        }
        return status
    }

    private func makeRequests() throws -> [DownloadRequest] {
        let checksum = try checksum.map { try Checksum(parsing: $0) }
        return try urls.map { url in
            var directory = self.directory
            var fileName: String?
            if let output {
                let path = (output as NSString).expandingTildeInPath
                let dir = (path as NSString).deletingLastPathComponent
                if !dir.isEmpty { directory = path.hasPrefix("/") ? dir : (self.directory as NSString).appendingPathComponent(dir) }
                fileName = (path as NSString).lastPathComponent
            }
            var request = try DownloadRequest(url: url, directory: directory, fileName: fileName)
            request.checksum = checksum
            request.collisionPolicy = overwrite ? .overwrite : (noClobber ? .fail : .rename)
            return request
        }
    }

    private func makeConfiguration() throws -> SwoopKit.Configuration {
        var configuration = SwoopKit.Configuration()
        configuration.retry.maxRetries = retries
        configuration.retry.baseDelay = .milliseconds(Int64(retryWait * 1000))
        configuration.timeouts.connect = .milliseconds(Int64(connectTimeout * 1000))
        configuration.timeouts.idle = .milliseconds(Int64(timeout * 1000))
        configuration.redirects.maxRedirects = maxRedirects
        configuration.redirects.allowInsecureDowngrade = allowInsecureRedirect
        configuration.tls.caCertificatePath = caCertificate
        configuration.tls.insecure = insecure
        if let userAgent { configuration.userAgent = userAgent }
        configuration.headers = try headers.map { line in
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw SwoopError(.invalidArgument, "invalid header '\(line)': expected 'Name: value'")
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, !name.contains(where: { $0.isWhitespace || $0.isNewline }), !value.contains(where: \.isNewline) else {
                throw SwoopError(.invalidArgument, "invalid header '\(line)': expected 'Name: value'")
            }
            return (name, value)
        }
        return configuration
    }

    private static func lockDirectory(in state: String) throws -> String {
        let locks = (state as NSString).appendingPathComponent("locks")
        do {
            try FileManager.default.createDirectory(atPath: locks, withIntermediateDirectories: true)
        } catch {
            throw SwoopError(.fileSystem, "cannot create \(locks): \(error.localizedDescription)")
        }
        return locks
    }
}
