import Foundation

/// How one download is made, where it differs from the manager's ``Configuration``: stored with the
/// download, so that a resume, a rerun or another process continues it as it was asked for.
///
/// Every setting is optional: `nil` follows the manager's configuration of the moment. A request's
/// settings are laid over the stored ones (``overriding(with:)``): what a rerun or a resume names
/// replaces what was stored, and the result is stored again.
///
/// Credentials from cookie files and netrc are not settings: they stay in their files.
public struct DownloadSettings: Sendable, Codable, Hashable {
    /// The most connections for the file (`-x`); see ``Configuration/Segments/maxConnections``.
    public var maxConnections: Int?
    /// The smallest segment in bytes; see ``Configuration/Segments/minSplitSize``.
    public var minSplitSize: Int?
    /// This download's rate limit in bytes per second; `0` is "no limit of its own" (not even the
    /// manager's default), `nil` follows ``Configuration/Limits/perDownloadBytesPerSecond``.
    public var bytesPerSecond: Int?
    /// Retries after a transient failure; see ``Configuration/Retry/maxRetries``.
    public var maxRetries: Int?
    /// The first retry delay in seconds; see ``Configuration/Retry/baseDelay``.
    public var retryWait: Double?
    /// The connect timeout in seconds; see ``Configuration/Timeouts/connect``.
    public var connectTimeout: Double?
    /// The idle timeout in seconds; see ``Configuration/Timeouts/idle``.
    public var idleTimeout: Double?
    /// The proxy (`--proxy`; "" for none); see ``Configuration/Proxy/url``.
    public var proxy: String?
    /// Hosts reached without a proxy (`--noproxy`); see ``Configuration/Proxy/noProxy``.
    public var noProxy: String?
    /// Whether the `*_proxy` environment variables are read; see ``Configuration/Proxy/useEnvironment``.
    public var useProxyEnvironment: Bool?
    /// Whether TLS certificates go unchecked (aria2's `check-certificate=false`); see
    /// ``Configuration/TLS/insecure``.
    public var insecure: Bool?

    /// No settings of its own: everything follows the manager's configuration.
    public init() {}

    /// Whether nothing is set.
    public var isEmpty: Bool { self == DownloadSettings() }

    /// These settings with every one that `newer` sets replacing this one's.
    public func overriding(with newer: DownloadSettings) -> DownloadSettings {
        var result = self
        result.maxConnections = newer.maxConnections ?? maxConnections
        result.minSplitSize = newer.minSplitSize ?? minSplitSize
        result.bytesPerSecond = newer.bytesPerSecond ?? bytesPerSecond
        result.maxRetries = newer.maxRetries ?? maxRetries
        result.retryWait = newer.retryWait ?? retryWait
        result.connectTimeout = newer.connectTimeout ?? connectTimeout
        result.idleTimeout = newer.idleTimeout ?? idleTimeout
        result.proxy = newer.proxy ?? proxy
        result.noProxy = newer.noProxy ?? noProxy
        result.useProxyEnvironment = newer.useProxyEnvironment ?? useProxyEnvironment
        result.insecure = newer.insecure ?? insecure
        return result
    }

    /// `configuration` with these settings in place of its own.
    public func applied(to configuration: Configuration) -> Configuration {
        var result = configuration
        if let maxConnections { result.segments.maxConnections = maxConnections }
        if let minSplitSize { result.segments.minSplitSize = minSplitSize }
        if let maxRetries { result.retry.maxRetries = maxRetries }
        if let retryWait { result.retry.baseDelay = .seconds(retryWait) }
        if let connectTimeout { result.timeouts.connect = .seconds(connectTimeout) }
        if let idleTimeout { result.timeouts.idle = .seconds(idleTimeout) }
        if let proxy { result.proxy.url = proxy }
        if let noProxy { result.proxy.noProxy = noProxy }
        if let useProxyEnvironment { result.proxy.useEnvironment = useProxyEnvironment }
        if let insecure { result.tls.insecure = insecure }
        return result
    }

    /// The download's own rate limit for ``RateLimits``: `nil` follows the default, `.some(nil)` is
    /// no limit, `.some(rate)` is `rate`.
    var ownRate: Int?? {
        bytesPerSecond.map { $0 == 0 ? nil : $0 }
    }

    /// Checks each setting's range, naming the setting and the value.
    ///
    /// - Throws: ``SwoopError/Code/invalidArgument``.
    public func validate() throws {
        func check(_ ok: Bool, _ message: @autoclosure () -> String) throws {
            if !ok { throw SwoopError(.invalidArgument, message()) }
        }
        if let maxConnections {
            let limit = Configuration.Segments.connectionLimit
            try check((1...limit).contains(maxConnections), "connections must be between 1 and \(limit) (got \(maxConnections))")
        }
        if let minSplitSize { try check(minSplitSize >= 1 << 10, "the smallest segment must be at least 1 KiB (got \(minSplitSize) bytes)") }
        if let bytesPerSecond { try check(bytesPerSecond >= 0, "a rate limit must be 0 (none) or more (got \(bytesPerSecond))") }
        if let maxRetries { try check((0...1000).contains(maxRetries), "retries must be between 0 and 1000 (got \(maxRetries))") }
        for (name, value) in [("retry wait", retryWait), ("connect timeout", connectTimeout), ("idle timeout", idleTimeout)] {
            if let value { try check(value > 0 && value <= 1_000_000, "the \(name) must be more than 0 and at most 1000000 seconds (got \(value))") }
        }
    }
}
