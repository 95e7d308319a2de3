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

    /// Gives one download a limit of its own (the overall limit still applies), stored with it
    /// (``DownloadSettings/bytesPerSecond``): at once when it runs, here or in another process
    /// (asked through the store, as ``pause(_:)`` does), else when it starts.
    ///
    /// - Parameters:
    ///   - id: A download in this manager's store.
    ///   - bytesPerSecond: The limit in bytes per second, or `nil` for no limit of its own (not
    ///     even the default).
    /// - Throws: ``SwoopError/Code/notFound`` for an unknown id; ``SwoopError/Code/invalidArgument``
    ///   for a limit below 1 or a download that is completed or removed; ``SwoopError/Code/inUse``
    ///   when another process runs it and does not answer (then nothing changed).
    public func setRateLimit(_ id: Download.ID, bytesPerSecond: Int?) async throws {
        try RateLimits.validate(bytesPerSecond, "the rate limit of download \(id)")
        var settings = DownloadSettings()
        settings.bytesPerSecond = bytesPerSecond ?? 0
        try await changeSettings(id, settings)
    }

    /// Lays `settings` over a download's stored settings (``DownloadSettings/overriding(with:)``)
    /// and stores them. Its rate limit changes at once when it runs, here or in another process
    /// (asked through the store, as ``pause(_:)`` does); the other settings apply from its next run.
    ///
    /// - Throws: ``SwoopError/Code/notFound`` for an unknown id; ``SwoopError/Code/invalidArgument``
    ///   for a setting out of range or a download that is completed or removed;
    ///   ``SwoopError/Code/inUse`` when another process runs it and does not answer (then nothing
    ///   changed).
    public func changeSettings(_ id: Download.ID, _ settings: DownloadSettings) async throws {
        try settings.validate()
        var record = try existingRecord(id)
        guard record.state != .completed, record.state != .removed else {
            throw SwoopError(.invalidArgument, "the download is \(record.state.rawValue): there is nothing to change")
        }
        let before = record.settings
        record.settings = before.overriding(with: settings)
        try store.update(settings: record.settings, id: id)
        // Running here: at once (its limiter is made when the run begins). Handed over and not
        // begun: it reads the stored settings when it begins.
        try rateLimits.set(id, own: record.settings.ownRate)
        if runs.contains(id) { return }
        // Not running here: another process may be transferring it. It takes the new settings on
        // when asked; a download that runs nowhere starts with them. A request that is not
        // answered, or withdrawn, changes nothing.
        do {
            _ = try await withLockOrOwner(id, asking: .applySettings) { _ in }
        } catch {
            try? store.update(settings: before, id: id)
            throw error
        }
    }

    /// The limit of all downloads together, in bytes per second (`nil`: none).
    public var overallRateLimit: Int? { rateLimits.overall.bytesPerSecond }

    /// The limit of each download without one of its own (`nil`: none).
    public var defaultRateLimit: Int? { rateLimits.defaultRate }
}
