import Foundation

/// What to do when the chosen file name is already taken by a file Swoop did not create.
public enum CollisionPolicy: String, Sendable, Codable, CaseIterable {
    /// Pick `name.1.ext`, `name.2.ext`, … (the default).
    case rename
    /// Replace the existing file when the download completes.
    case overwrite
    /// Fail with ``SwoopError/Code/destinationExists``.
    case fail
}

/// One download to make: the URL, where it goes and how to check it.
public struct DownloadRequest: Sendable {
    /// The URL (http or https only).
    public var url: URL
    /// The absolute directory the file is written to.
    public var directory: String
    /// The file name to use instead of the server's or the URL's.
    public var fileName: String?
    /// Extra request headers for this download. A request for a download the store knows adds them
    /// to the stored ones (replacing stored headers of the same name); none keeps the stored ones.
    public var headers: [(name: String, value: String)] = []
    /// The expected checksum, verified before the file gets its final name; `nil` keeps a known
    /// download's stored checksum.
    public var checksum: Checksum?
    /// What to do when the name is taken; `nil` keeps a known download's stored policy, and a new
    /// download renames (``CollisionPolicy/rename``).
    public var collisionPolicy: CollisionPolicy?
    /// Higher priorities leave the waiting queue first.
    public var priority: Int = 0
    /// This download's own settings (connections, rate limit, retries, timeouts, proxy), stored with
    /// it and laid over the ones stored before (see ``DownloadSettings/overriding(with:)``).
    public var settings = DownloadSettings()
    /// More URLs of the same file (mirrors): its segments are spread over them and ``url``, at most
    /// ``DownloadSettings/maxConnections`` connections in all. A mirror must answer with the same
    /// length and (unless a ``checksum`` is given, which then verifies the result) the same strong
    /// ETag as ``url``, else it is dropped with a notice; one that fails loses its segments to the
    /// others. Stored; a request that names mirrors replaces the stored ones.
    public var mirrors: [URL] = []
    /// When this URL takes over the unfinished download of another URL to the same file (see
    /// ``SourceChange``): keep its bytes on a matching length and Last-Modified when there is no
    /// strong ETag to prove the file the same. Risky: two different files can share both. Not stored.
    public var trustMirrorLength = false
    /// For a completed download: ask the server whether the file changed since (`If-None-Match`,
    /// `If-Modified-Since`, as wget `-N` and curl `-z`), and download it again when it did, beside
    /// the old file, which is replaced only once the new one is complete. Without it a completed
    /// download is "already complete" with no request. Not stored.
    public var refresh = false
    /// The id a new download takes (a fleet's node runs a claimed download under the catalogue's
    /// id, so that its GID is the same on every daemon); `nil` makes one. A download the store
    /// knows keeps its id.
    public var id: Download.ID?
    /// Add it paused (aria2's `pause=true`): stored, in its place in the queue, and not started
    /// until it is resumed. A download already running is not paused by a new request. Not stored.
    public var paused = false

    /// This download's own rate limit in bytes per second, instead of
    /// ``Configuration/Limits/perDownloadBytesPerSecond``: ``DownloadSettings/bytesPerSecond``, with
    /// `nil` for "the default".
    public var bytesPerSecond: Int? {
        get { settings.bytesPerSecond }
        set { settings.bytesPerSecond = newValue }
    }

    /// Validates and creates a request.
    ///
    /// - Parameters:
    ///   - url: An absolute http or https URL.
    ///   - directory: The target directory; relative paths are resolved against the current directory.
    ///   - fileName: A file name to use; it must not contain a path separator.
    /// - Throws: ``SwoopError`` with code ``SwoopError/Code/invalidURL``,
    ///   ``SwoopError/Code/unsupportedScheme`` or ``SwoopError/Code/invalidArgument``.
    public init(url: String, directory: String, fileName: String? = nil) throws {
        self.url = try Self.validate(url)
        self.directory = Self.absolute(directory)
        if let fileName {
            guard FileNaming.sanitize(fileName) == fileName else {
                throw SwoopError(.invalidArgument, "invalid output file name \(fileName.debugDescription): \(Self.nameProblem(fileName))")
            }
        }
        self.fileName = fileName
    }

    /// Why `name` is not a file name ``FileNaming/sanitize(_:)`` keeps as it is.
    static func nameProblem(_ name: String) -> String {
        let bytes = name.utf8.count
        if bytes > FileNaming.maxFinalNameBytes {
            return "longer than \(FileNaming.maxFinalNameBytes) bytes (\(bytes); the part file adds \(FileNaming.partSuffix))"
        }
        if name.isEmpty || name == "." || name == ".." { return "not a file's name" }
        if name.contains("/") { return "a name cannot have '/' (-d names the directory)" }
        return "it has characters a file name cannot have here"
    }

    /// What identifies this download in the store.
    public var key: DownloadKey {
        DownloadKey(url: url.absoluteString, directory: directory, requestedName: fileName ?? "")
    }

    /// The ports a URL may name: NIO traps on a socket address with any other.
    public static let validPorts = 1...65_535

    /// Why `url`'s port cannot be connected to ("the port 99999 is not a number from 1 to 65535"),
    /// or `nil` for none or a valid one.
    public static func portProblem(_ url: URL) -> String? {
        if let port = url.port {
            return validPorts.contains(port) ? nil : "the port \(port) is not a number from 1 to 65535"
        }
        // A port too large for an `Int` reads as none (then port 80 would be used): its text says.
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true), let range = components.rangeOfPort,
            let string = components.string, !range.isEmpty
        else { return nil }
        return "the port \(string[range]) is not a number from 1 to 65535"
    }

    /// Checks that `string` is an absolute http(s) URL with a host and a port from 1 to 65535.
    public static func validate(_ string: String) throws -> URL {
        let trimmed = Syntax.trimmingWhitespace(string)
        // One parse: `URL(string:)` reads (and percent-encodes) what `URLComponents(string:)`
        // does, to the same URL; going through the components parsed the text twice.
        guard !trimmed.isEmpty, let url = URL(string: trimmed), let scheme = url.scheme, !scheme.isEmpty
        else {
            throw SwoopError(.invalidURL, "invalid URL: \(string)")
        }
        guard ["http", "https"].contains(scheme.lowercased()) else {
            throw SwoopError(.unsupportedScheme, "unsupported URL scheme '\(scheme)' in \(string): only http and https")
        }
        // The host as written (percent-encoded): decoding it would run IDNA through ICU, which
        // costs megabytes of memory for nothing on an ASCII host.
        guard let host = url.host(percentEncoded: true), !host.isEmpty else {
            throw SwoopError(.invalidURL, "invalid URL (no host): \(string)")
        }
        if let problem = portProblem(url) {
            throw SwoopError(.invalidURL, "invalid URL (\(problem)): \(string)")
        }
        return url
    }

    /// Whether `path` starts with `/` and has no empty, `.` or `..` component and no trailing `/`
    /// (except `/` itself): one pass over its bytes.
    static func isCleanAbsolute(_ path: String) -> Bool {
        let bytes = path.utf8
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        // Each component: its length, and whether it is all dots (then 1 or 2 dots are not allowed).
        var length = 0
        var allDots = true
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "/") {
                if length == 0 || (allDots && length <= 2) { return false }
                length = 0
                allDots = true
            } else {
                length += 1
                allDots = allDots && byte == UInt8(ascii: ".")
            }
        }
        return length > 0 && !(allDots && length <= 2)
    }

    /// `path` made absolute (from the current directory, `~` expanded) and standardized, as a
    /// request stores its directory.
    public static func absolute(_ path: String) -> String {
        // Already absolute and clean (the common case when queueing thousands): nothing to resolve.
        if isCleanAbsolute(path) { return path }
        let expanded = (path as NSString).expandingTildeInPath
        let absolute = expanded.hasPrefix("/")
            ? expanded : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(expanded)
        return (absolute as NSString).standardizingPath
    }
}
