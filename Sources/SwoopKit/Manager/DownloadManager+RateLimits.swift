extension DownloadManager {
    /// Changes the limit of all downloads together, at once for running ones.
    ///
    /// - Parameter bytesPerSecond: The limit in bytes per second, or `nil` for no limit.
    /// - Throws: ``SwoopError/Code/invalidArgument`` for a limit below 1.
    public func setOverallRateLimit(_ bytesPerSecond: Int?) throws {
        try rateLimits.setOverall(bytesPerSecond)
    }

    /// Changes the limit of each download that has none of its own (see
    /// ``setRateLimit(_:bytesPerSecond:)`` and ``DownloadRequest/bytesPerSecond``), at once for
    /// running ones.
    ///
    /// - Parameter bytesPerSecond: The limit in bytes per second, or `nil` for no limit.
    /// - Throws: ``SwoopError/Code/invalidArgument`` for a limit below 1.
    public func setDefaultRateLimit(_ bytesPerSecond: Int?) throws {
        try rateLimits.setDefault(bytesPerSecond)
    }

    /// Gives one download a limit of its own (the overall limit still applies): at once when it
    /// runs, else when it starts. Held for the life of this manager, not stored.
    ///
    /// - Parameters:
    ///   - id: A download in this manager's store.
    ///   - bytesPerSecond: The limit in bytes per second, or `nil` for no limit of its own (not
    ///     even the default).
    /// - Throws: ``SwoopError/Code/notFound`` for an unknown id; ``SwoopError/Code/invalidArgument``
    ///   for a limit below 1.
    public func setRateLimit(_ id: Download.ID, bytesPerSecond: Int?) throws {
        try RateLimits.validate(bytesPerSecond, "the rate limit of download \(id)")
        guard try store.record(id: id) != nil else {
            throw SwoopError(.notFound, "no download with id \(id)")
        }
        try rateLimits.set(id, rate: bytesPerSecond)
    }
}
