import ArgumentParser
import Foundation
import SwoopConsole
import SwoopKit
import SwoopStore

/// Options every subcommand takes where they make sense.
struct GlobalOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Where Swoop keeps its state (default $XDG_STATE_HOME/swoop, else ~/.local/state/swoop).", valueName: "dir"))
    var stateDir: String?

    @Flag(name: .shortAndLong, help: "Print only errors.")
    var quiet = false

    @Flag(help: "Print results as JSON (one object per line; `ls` prints one array). Standard output then holds only JSON.")
    var json = false

    var stateDirectory: String {
        stateDir.map { ($0 as NSString).expandingTildeInPath } ?? SQLiteDownloadStore.defaultDirectory()
    }

    /// Opens the state database, creating the directory.
    func openStore() throws -> SQLiteDownloadStore {
        try SQLiteDownloadStore(directory: stateDirectory)
    }

    /// Whether the state directory has a database. A command that only looks at downloads or
    /// changes known ones makes none: a mistyped --state-dir would be left behind.
    var hasStore: Bool {
        FileManager.default.fileExists(atPath: SQLiteDownloadStore.path(in: stateDirectory))
    }

    /// The state directory's database, if it has one; else ``SwoopError/Code/notFound`` naming the directory.
    func openExistingStore() throws -> SQLiteDownloadStore {
        guard hasStore else { throw SwoopError(.notFound, "no downloads in \(stateDirectory): it has no state database") }
        return try openStore()
    }

    /// What a command that finds nothing adds when the state directory has no database: a
    /// mistyped --state-dir must not read as an empty queue.
    var noStore: String { "\(stateDirectory) has no state database" }

    /// The directory of the per-download lock files, created on demand.
    func lockDirectory() throws -> String {
        let locks = (stateDirectory as NSString).appendingPathComponent("locks")
        try FileSystem.createDirectories(locks, what: "lock directory")
        return locks
    }
}

/// How downloads are made: shared by `get` and `resume`.
struct TransferOptions: ParsableArguments {
    // Numbers are read `.unconditional`ly: `-j -1` is the value -1, named by the range check, not
    // "Missing value" (ArgumentParser takes "-1" for an option).
    @Flag(help: "With --json: also print each running download's state (\"state\": \"active\") at most once a second.")
    var progress = false

    @Option(name: [.customShort("j"), .customLong("max-concurrent")], parsing: .unconditional, help: "Most downloads at once; the rest wait.")
    var maxConcurrent: Int = 5

    @Option(parsing: .unconditional, help: ArgumentHelp("Most downloads from one host at once (default: no limit).", valueName: "n"))
    var maxPerHost: Int?

    @Option(
        name: [.customShort("x"), .customShort("s"), .customLong("connections")], parsing: .unconditional,
        help: "Connections per file (default 1; -s as in aria2); a file splits only if the server supports ranges."
    )
    var connections: Int?

    @Option(parsing: .unconditional, help: ArgumentHelp("Smallest segment when a file is split (default 8M; K, M, G suffixes).", valueName: "size"))
    var minSplitSize: String?

    @Flag(
        help: "When a new URL takes over an unfinished download of the same file name (a re-signed link): keep its bytes on a matching length and Last-Modified if there is no strong ETag (risky: two files can share both)."
    )
    var trustMirrorLength = false

    @Flag(help: "Allow HTTP/2 over TLS (off by default: slower for bulk data here; see the README).")
    var http2 = false

    @Option(
        name: [.customShort("H"), .customLong("header")],
        help: ArgumentHelp("Extra request header, stored with the download ('Name:' with no value removes it).", valueName: "name: value")
    )
    var headers: [String] = []

    @Option(help: "The User-Agent header.")
    var userAgent: String?

    @Option(parsing: .unconditional, help: "Retries after a transient failure (default 5; the count resets when a download gets further).")
    var retries: Int?

    @Option(parsing: .unconditional, help: ArgumentHelp("First retry delay (default 0.5); doubles each retry.", valueName: "seconds"))
    var retryWait: Double?

    @Option(parsing: .unconditional, help: ArgumentHelp("Give up connecting after this long (default 30).", valueName: "seconds"))
    var connectTimeout: Double?

    @Option(parsing: .unconditional, help: ArgumentHelp("Retry when no data arrives for this long (default 60; not a total deadline).", valueName: "seconds"))
    var timeout: Double?

    @Option(parsing: .unconditional, help: "Most redirects to follow.")
    var maxRedirects: Int = 10

    @Flag(help: "Allow a redirect from https to http.")
    var allowInsecureRedirect = false

    @Option(help: ArgumentHelp("Also trust the CA certificates in this PEM file.", valueName: "path"))
    var caCertificate: String?

    @Flag(name: [.customShort("k"), .long], help: "Do not verify TLS certificates (dangerous).")
    var insecure = false

    @Option(parsing: .unconditional, help: ArgumentHelp("Keep at most N finished downloads in the list (default: all).", valueName: "n"))
    var keepFinished: Int?

    @Option(parsing: .unconditional, help: ArgumentHelp("Forget finished downloads older than this many days (default: never).", valueName: "days"))
    var keepDays: Double?

    @Option(help: ArgumentHelp("Send the cookies in this Netscape cookies.txt file to the hosts they name.", valueName: "file"))
    var loadCookies: String?

    @Flag(help: "Send the login for each host from ~/.netrc (Authorization: Basic).")
    var netrc = false

    @Option(help: ArgumentHelp("Like --netrc, with this file instead of ~/.netrc.", valueName: "file"))
    var netrcFile: String?

    @OptionGroup var proxy: ProxyOptions

    func validate() throws {
        guard (1...10_000).contains(maxConcurrent) else { throw ValidationError("-j/--max-concurrent must be between 1 and 10000") }
        if let maxPerHost, !(1...10_000).contains(maxPerHost) {
            throw ValidationError("--max-per-host must be between 1 and 10000")
        }
        if let retries, !(0...1000).contains(retries) { throw ValidationError("--retries must be between 0 and 1000") }
        let limit = Configuration.Segments.connectionLimit
        if let connections, !(1...limit).contains(connections) { throw ValidationError("-x/--connections must be between 1 and \(limit)") }
        if let minSplitSize {
            guard let bytes = ByteFormatting.parseSize(minSplitSize), bytes >= 1 << 10 else {
                throw ValidationError("--min-split-size must be a size of at least 1K, like 1M or 20M (got '\(minSplitSize)')")
            }
        }
        if let keepFinished, keepFinished < 0 { throw ValidationError("--keep-finished must be 0 or more") }
        if let keepDays, !(keepDays >= 0 && keepDays <= 1_000_000) { throw ValidationError("--keep-days must be between 0 and 1000000") }
        guard (0...100).contains(maxRedirects) else { throw ValidationError("--max-redirects must be between 0 and 100") }
        for case let value? in [retryWait, connectTimeout, timeout] where !(value > 0 && value <= 1_000_000) {
            throw ValidationError("timeouts and waits must be more than 0 and at most 1000000 seconds")
        }
        do {
            _ = try limits()
            _ = try settings()
        } catch let error as SwoopError {
            // With --help (or another of ArgumentParser's own flags) that wins, as it does over any
            // validation error: nothing said here.
            let arguments = SwoopCommand.parsing ?? Array(CommandLine.arguments.dropFirst())
            if SwoopCommand.asksArgumentParserItself(arguments) { throw ExitCode(ExitStatus.usage) }
            // One line and exit 2, before any state is created (a ValidationError prints the usage).
            throw error.exit(on: Console(quiet: false))
        }
    }

    /// The `-H` headers, parsed.
    func parsedHeaders() throws -> [(name: String, value: String)] {
        try HeaderOption.parse(headers)
    }

    /// The settings given on this command line, stored with each download (`get`) or laid over the
    /// stored ones (`resume`). What is not given follows the stored settings, else the defaults.
    func settings() throws -> DownloadSettings {
        var settings = DownloadSettings()
        settings.maxConnections = connections
        settings.minSplitSize = minSplitSize.flatMap(ByteFormatting.parseSize)
        settings.bytesPerSecond = try Self.rate(limitRate, option: "--limit-rate").map { $0 ?? 0 }
        settings.maxRetries = retries
        settings.retryWait = retryWait
        settings.connectTimeout = connectTimeout
        settings.idleTimeout = timeout
        try proxy.apply(to: &settings)
        return settings
    }

    /// The library configuration these options describe: what holds for the whole run. The
    /// per-download options (`-H`, `-x`, `--limit-rate`, retries, timeouts, proxy) are not in it:
    /// they are stored with each download (``settings()``).
    func configuration(lockDirectory: String?) throws -> SwoopKit.Configuration {
        var configuration = SwoopKit.Configuration()
        configuration.history.maxFinished = keepFinished
        configuration.history.maxAge = keepDays.map { .milliseconds(Int64($0 * 86_400_000)) }
        configuration.queue.maxConcurrentDownloads = maxConcurrent
        configuration.queue.maxPerHost = maxPerHost
        configuration.allowHTTP2 = http2
        configuration.redirects.maxRedirects = maxRedirects
        configuration.redirects.allowInsecureDowngrade = allowInsecureRedirect
        configuration.tls.caCertificatePath = caCertificate
        configuration.tls.insecure = insecure
        if let userAgent { configuration.userAgent = userAgent }
        configuration.lockDirectory = lockDirectory
        configuration.limits = try limits()
        // Also the run's: `--no-proxy-env` or `--proxy` keep a bad *_proxy variable from stopping
        // the manager before any download is asked for (each download's own are in its settings).
        try proxy.apply(to: &configuration)
        return configuration
    }

    @Option(parsing: .unconditional, help: ArgumentHelp("Limit each download to RATE bytes/s (K, M, G suffixes; 0: no limit).", valueName: "rate"))
    var limitRate: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Limit all downloads together to RATE bytes/s (K, M, G suffixes; 0: no limit).", valueName: "rate"))
    var maxOverallLimit: String?

    /// The `--max-overall-limit` value (`--limit-rate` is each download's own: ``settings()``).
    ///
    /// - Throws: ``SwoopError/Code/invalidArgument`` naming the option and the value.
    func limits() throws -> SwoopKit.Configuration.Limits {
        var limits = SwoopKit.Configuration.Limits()
        limits.overallBytesPerSecond = try Self.rate(maxOverallLimit, option: "--max-overall-limit") ?? nil
        return limits
    }

    /// A rate such as `500K` or `1.5M` in bytes per second (binary units, as sizes); `0` is no limit,
    /// as in aria2 (`.some(nil)`); no text is `nil`.
    static func rate(_ text: String?, option: String) throws -> Int?? {
        guard let text else { return nil }
        guard let bytes = ByteFormatting.parseSize(text) else {
            throw SwoopError(.invalidArgument, "invalid \(option) '\(text)': give bytes per second such as 500K, 2M or 1G (0 for no limit)")
        }
        // 0.5 bytes/s rounds to 0, which is "no limit": the opposite of what was asked.
        if bytes == 0, text.contains(where: { ("1"..."9").contains($0) }) {
            throw SwoopError(.invalidArgument, "invalid \(option) '\(text)': less than 1 byte per second (0 is no limit)")
        }
        return .some(bytes == 0 ? nil : bytes)
    }
}

extension TransferOptions {
    /// Reads `--load-cookies` and `--netrc`/`--netrc-file` (the file wins over `--netrc`, as in curl).
    /// Credentials are never stored with a download: `resume` needs these options again.
    ///
    /// - Parameter warn: Called with each warning: skipped cookie lines, a netrc others can read.
    /// - Throws: ``SwoopError`` naming the file (and line) that cannot be read or parsed.
    func credentials(warn: (String) -> Void) throws -> SwoopKit.Configuration.Credentials {
        var credentials = SwoopKit.Configuration.Credentials()
        if let loadCookies {
            let jar = try CookieJar(contentsOfFile: loadCookies)
            if let first = jar.skippedLines.first {
                let more = jar.skippedLines.count > 1 ? " (and \(jar.skippedLines.count - 1) more)" : ""
                warn("\(loadCookies):\(first): skipped a malformed cookie line\(more)")
            }
            credentials.cookies = jar
        }
        if netrc || netrcFile != nil {
            let path = netrcFile ?? Netrc.defaultPath()
            credentials.netrc = try Netrc(contentsOfFile: path)
            if let mode = Self.permissions(path), mode & 0o077 != 0 {
                warn("\(path) is open to other users (mode \(String(mode & 0o777, radix: 8))): run chmod 600 on it")
            }
        }
        return credentials
    }

    /// The permission bits of a file, or `nil` when it cannot be examined.
    private static func permissions(_ path: String) -> Int? {
        let attributes = try? FileManager.default.attributesOfItem(atPath: (path as NSString).expandingTildeInPath)
        return (attributes?[.posixPermissions] as? NSNumber)?.intValue
    }
}

/// The proxy options of `get`, `resume` and `fetch`.
struct ProxyOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Send requests through this proxy: http://[user:password@]host[:port], socks5://host[:port] or socks5h://host[:port] (\"\" for none). Default: $https_proxy, $http_proxy, $all_proxy.",
            valueName: "url"
        )
    )
    var proxy: String?

    @Option(help: ArgumentHelp("Hosts to reach without a proxy, comma-separated; * for all (replaces $no_proxy).", valueName: "list"))
    var noproxy: String?

    @Flag(help: "Ignore the proxy environment variables (https_proxy, http_proxy, all_proxy, no_proxy).")
    var noProxyEnv = false

    /// Applies the options given to a download's settings (what is not given stays as stored).
    func apply(to settings: inout DownloadSettings) throws {
        if let proxy, !proxy.trimmingCharacters(in: .whitespaces).isEmpty {
            // Checked here so that the error names the option (the engine names "the proxy setting").
            _ = try ProxySettings(parsing: proxy.trimmingCharacters(in: .whitespaces), source: "--proxy")
        }
        settings.proxy = proxy
        settings.noProxy = noproxy
        if noProxyEnv { settings.useProxyEnvironment = false }
    }

    /// Applies the options to a configuration (`fetch`, which stores nothing).
    func apply(to configuration: inout SwoopKit.Configuration) throws {
        var settings = DownloadSettings()
        try apply(to: &settings)
        configuration = settings.applied(to: configuration)
    }
}

extension SwoopError {
    /// The message with the command-line advice that fits it: the engine says what happened, the
    /// command line says which option changes it.
    var userMessage: String {
        // The collision policy's refusal ("PATH already exists"), not a rename that lost a race.
        if code == .destinationExists, message.hasSuffix(" already exists"), !message.hasPrefix("cannot rename") {
            return message + " (use --overwrite to replace it)"
        }
        // A rename that lost a race: the bytes wait in the part file (FileSystem.publish's message).
        if code == .destinationExists, let taken = message.range(of: " appeared meanwhile; the download is kept in "),
            let colon = message[..<taken.lowerBound].range(of: ": ", options: .backwards)
        {
            let final = message[colon.upperBound..<taken.lowerBound]
            return message + " (move \(final) away and run the same command again, or add --overwrite to replace it)"
        }
        if code == .invalidArgument, message.hasSuffix("; download it to a file instead") {
            return message + " (swoop get)"
        }
        if code == .tls, message.hasSuffix("certificate verification failed") {
            return message + " (use --ca-certificate for a private CA)"
        }
        return message
    }

    /// Prints the error and turns it into the documented exit code.
    func exit(on console: Console) -> ExitCode {
        console.error(userMessage)
        return ExitCode(ExitStatus.code(for: self))
    }
}
