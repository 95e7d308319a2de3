import ArgumentParser
import Foundation
import SwoopConsole
import SwoopKit

#if canImport(Glibc)
import Glibc
#endif

struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Write a small file's bytes to standard output, through a disk cache.",
        discussion: """
            A fresh cached copy is printed without a request; a stale one is revalidated (If-None-Match, \
            If-Modified-Since). Bodies over 16 MiB are refused: use `swoop get` for those.
            """
    )

    @Argument(help: "The http or https URL.")
    var url: String

    @Option(name: [.customShort("H"), .customLong("header")], help: ArgumentHelp("Extra request header.", valueName: "name: value"))
    var headers: [String] = []

    @Option(help: "The User-Agent header.")
    var userAgent: String?

    @Option(help: ArgumentHelp("The cache directory (default $XDG_CACHE_HOME/swoop, else ~/.cache/swoop).", valueName: "dir"))
    var cacheDir: String?

    @Flag(help: "Neither read nor write the cache.")
    var noCache = false

    @OptionGroup var proxy: ProxyOptions

    func validate() throws {
        if noCache && cacheDir != nil { throw ValidationError("--no-cache and --cache-dir contradict each other") }
    }

    func run() async throws {
        let console = Console(quiet: true)
        // A reader that goes away (`swoop fetch URL | head -c 10`) is an EPIPE error, not a silent death.
        signal(SIGPIPE, SIG_IGN)
        do {
            let headers = try HeaderOption.parse(self.headers)
            var configuration = SwoopKit.Configuration()
            if let userAgent { configuration.userAgent = userAgent }
            try proxy.apply(to: &configuration)
            if !noCache {
                configuration.cache.directory = cacheDir.map { ($0 as NSString).expandingTildeInPath }
                    ?? SwoopKit.Configuration.Cache.defaultDirectory()
            }
            let manager = try DownloadManager(configuration: configuration)
            let result: Result<Data, any Error>
            do {
                result = .success(try await manager.data(from: url, headers: headers))
            } catch {
                result = .failure(error)
            }
            try? await manager.shutdown()
            try StandardOutput.write(try result.get())
        } catch let error as SwoopError {
            console.error(error.userMessage)
            throw ExitCode(ExitStatus.code(for: error))
        } catch {
            console.error("\(error)")
            throw ExitCode(ExitStatus.failure)
        }
    }
}

/// Raw bytes to standard output.
enum StandardOutput {
    /// Writes all of `data`, retrying short writes and `EINTR`.
    ///
    /// - Throws: ``SwoopError`` (file system) naming standard output, for example on `EPIPE`.
    static func write(_ data: Data) throws {
        let failure = data.withUnsafeBytes { WriteAll.write(STDOUT_FILENO, $0) }
        if let failure {
            throw SwoopError(.fileSystem, "cannot write to standard output: \(String(cString: strerror(failure)))")
        }
    }
}
