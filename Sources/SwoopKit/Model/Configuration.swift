import Foundation

/// How the manager downloads: retries, timeouts, redirects, TLS, durability. A value with defaults;
/// change what you need.
public struct Configuration: Sendable {
    /// When and how often a failed attempt is tried again.
    public struct Retry: Sendable, Hashable {
        /// How many times a retryable failure is retried in a row (an attempt that wrote bytes resets
        /// the count, so a slow flaky server still finishes).
        public var maxRetries: Int = 5
        /// The first delay; each further retry doubles it, with jitter.
        public var baseDelay: Duration = .milliseconds(500)
        /// The largest backoff delay.
        public var maxDelay: Duration = .seconds(30)
        /// The largest `Retry-After` honoured.
        public var maxRetryAfter: Duration = .seconds(120)
        public init() {}
    }

    /// Time limits. Neither is a total deadline: a slow but live download never dies.
    public struct Timeouts: Sendable, Hashable {
        /// How long to wait for a connection (TCP and TLS).
        public var connect: Duration = .seconds(30)
        /// How long the connection may stay silent before the attempt fails (and is retried).
        public var idle: Duration = .seconds(60)
        public init() {}
    }

    /// Redirect rules.
    public struct Redirects: Sendable, Hashable {
        /// The most redirects followed for one request.
        public var maxRedirects: Int = 10
        /// Whether an https URL may redirect to plain http.
        public var allowInsecureDowngrade: Bool = false
        public init() {}
    }

    /// TLS trust.
    public struct TLS: Sendable, Hashable {
        /// A PEM file of extra trusted certificates (a private CA).
        public var caCertificatePath: String?
        /// Skip certificate verification entirely. Dangerous.
        public var insecure: Bool = false
        public init() {}
    }

    /// How often progress is recorded.
    public struct Durability: Sendable, Hashable {
        /// Record progress in the store after at most this many new bytes. Bounds what a process
        /// crash costs.
        public var checkpointBytes: Int = 1 << 20
        /// Record progress at least this often while bytes arrive.
        public var checkpointInterval: Duration = .milliseconds(500)
        /// Flush the part file to disk (`fdatasync`, off the hot path) this often. Bounds what a
        /// machine crash costs.
        public var syncInterval: Duration = .seconds(5)
        /// A download whose first answer has not come after this long is recorded `active` for
        /// other processes (`swoop ls`); one that answers sooner records it with its first save.
        public var activeMarkDelay: Duration = .milliseconds(200)
        /// How long ``DownloadManager/pause(_:)``, ``DownloadManager/remove(_:deletingFile:)`` and the
        /// others wait for another process that transfers the download to carry the request out
        /// (it watches the store while it runs and answers within a second).
        public var controlTimeout: Duration = .seconds(10)
        public init() {}
    }

    /// How many downloads run at once.
    public struct Queue: Sendable, Hashable {
        /// The most downloads transferring at once; the rest wait (changeable while running with
        /// ``DownloadManager/setMaxConcurrentDownloads(_:)``).
        public var maxConcurrentDownloads: Int = 5
        /// The most downloads from one host at once, or `nil` for no limit.
        public var maxPerHost: Int?
        public init() {}
    }

    /// How long finished downloads stay listed. Applied by ``DownloadManager/reconcile()``.
    public struct History: Sendable, Hashable {
        /// Keep at most this many completed or removed downloads (the newest), or `nil` for all.
        public var maxFinished: Int?
        /// Forget completed or removed downloads older than this, or `nil` to keep them.
        public var maxAge: Duration?
        public init() {}
    }

    /// Downloading one file over several connections.
    public struct Segments: Sendable, Hashable {
        /// The most connections for one file (`-x`). 1, the default, downloads front to back over one
        /// connection, as curl and aria2 do by default; more splits a file whose server supports
        /// ranges and says its length and a validator.
        public var maxConnections: Int = 1
        /// No segment is smaller than this: a file under twice this size keeps one connection, and a
        /// connection takes over half of another's range only when that half is at least this big.
        public var minSplitSize: Int = 8 << 20
        /// The most connections one file may have (`-x` and aria2's `split` go up to it).
        public static let connectionLimit = 64
        public init() {}
    }

    public var queue = Queue()
    public var segments = Segments()
    /// Whether HTTP/2 may be negotiated over TLS (ALPN). Off by default: measured here
    /// (`scripts/bench-http2.py`), AsyncHTTPClient moves bulk data much slower over HTTP/2 than over
    /// HTTP/1.1 with TLS; see the README for the figures.
    public var allowHTTP2 = false
    public var history = History()
    public var retry = Retry()
    public var timeouts = Timeouts()
    public var redirects = Redirects()
    public var tls = TLS()
    public var durability = Durability()
    /// Headers sent with every request, after Swoop's own (a name given here replaces Swoop's).
    public var headers: [(name: String, value: String)] = []
    /// The `User-Agent` header.
    public var userAgent: String = "swoop/\(Swoop.version)"
    /// Where cross-process lock files live; `nil` disables cross-process locking.
    public var lockDirectory: String?
    /// Whether ``DownloadManager/cancel(_:)`` leaves the part file where it is (aria2's `remove`
    /// keeps what was downloaded; a daemon speaking aria2's protocol sets this). Off: it is deleted.
    public var cancelKeepsPartFile = false
    /// The largest socket read. Larger reads mean fewer wake-ups and fewer rounds of the loopback's ACK
    /// work: 1 GiB into tmpfs took 0.46 s with 512 KiB reads against 0.67 s with 256 KiB (median of 7),
    /// at the same peak RSS since each connection keeps one read buffer (see `HTTPClientFactory`);
    /// 1 MiB was no faster and 0.5 MiB larger. A connection's reads start at 16 KiB and grow to this
    /// as they fill (`GrowingReadSize`): small files never need it.
    public var receiveBufferSize: Int = 1 << 19

    /// The default configuration.
    public init() {}

    /// The disk cache of ``DownloadManager/data(from:headers:)``: size limits and where it lives.
    public struct Cache: Sendable, Hashable {
        /// The cache directory (created when needed); `nil`, the default, keeps no cache, so every
        /// call makes a request.
        public var directory: String?
        /// The most body bytes the cache keeps; beyond it, the least recently used entries go.
        public var maxBytes: Int = 64 << 20
        /// The largest body `data(from:)` accepts, cached or not; a bigger one is an error that says to
        /// download the file instead. Bounds the memory one call can take.
        public var maxEntryBytes: Int = 16 << 20
        public init() {}

        /// `$XDG_CACHE_HOME/swoop`, else `~/.cache/swoop`.
        ///
        /// - Parameter environment: The environment to read `XDG_CACHE_HOME` and `HOME` from.
        public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
            if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") {
                return (cache as NSString).appendingPathComponent("swoop")
            }
            let home = environment["HOME"] ?? NSHomeDirectory()
            return (home as NSString).appendingPathComponent(".cache/swoop")
        }
    }

    /// The response cache of ``DownloadManager/data(from:headers:)`` (off unless a directory is set).
    public var cache = Cache()
    /// Cookies and netrc logins, each sent only to its own hosts (none by default).
    public var credentials = Credentials()

    /// Which proxy requests go through; see ``ProxySelector`` for how one is picked per URL.
    public struct Proxy: Sendable, Hashable {
        /// The proxy for every request (`--proxy`), overriding the environment's: `http://[user:password@]host[:port]`,
        /// `socks5://host[:port]`, `socks5h://host[:port]` or `host[:port]`. The empty string means no
        /// proxy at all; `nil` leaves the choice to the environment.
        public var url: String?
        /// Hosts reached directly (`--noproxy`), replacing `no_proxy`; see ``NoProxyList``.
        public var noProxy: String?
        /// Whether `https_proxy`, `http_proxy`, `all_proxy` and `no_proxy` (and their upper-case forms
        /// but `HTTP_PROXY`) are read.
        public var useEnvironment: Bool = true
        /// The environment to read them from; `nil` means this process's.
        public var environment: [String: String]?
        public init() {}
    }

    /// The proxy settings (by default, the environment's `*_proxy` variables, as curl reads them).
    public var proxy = Proxy()

    /// Rate limits, in bytes per second; `nil` is no limit. Changeable while running with
    /// ``DownloadManager/setDefaultRateLimit(_:)``, ``DownloadManager/setRateLimit(_:bytesPerSecond:)``
    /// and ``DownloadManager/setOverallRateLimit(_:)``.
    public struct Limits: Sendable, Hashable {
        /// The limit of each download that names none of its own (``DownloadRequest/bytesPerSecond``).
        public var perDownloadBytesPerSecond: Int?
        /// The limit of all downloads together.
        public var overallBytesPerSecond: Int?
        public init() {}
    }

    /// Rate limits (none by default).
    public var limits = Limits()
}

/// Facts about the library.
public enum Swoop {
    /// The library's version.
    public static let version = "0.1.0"
}
