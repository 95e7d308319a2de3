import Foundation

extension Swoop {
    /// Downloads one URL into a directory, the simple way: no state directory, default settings.
    ///
    /// ```swift
    /// let file = try await Swoop.download(from: "https://example.com/big.iso", to: "/tmp") { download in
    ///     print(download.completedBytes, download.totalBytes ?? -1)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - url: An http or https URL.
    ///   - directory: Where the file goes; the name comes from the server or the URL.
    ///   - configuration: Retries, timeouts, TLS.
    ///   - progress: Called with a snapshot as bytes arrive (at most about ten times a second).
    /// - Returns: The completed download; its `destination` is the file's path.
    /// - Throws: ``SwoopError``.
    public static func download(
        from url: String, to directory: String, configuration: Configuration = Configuration(),
        progress: @escaping @Sendable (Download) -> Void = { _ in }
    ) async throws -> Download {
        let request = try DownloadRequest(url: url, directory: directory)
        let manager = try DownloadManager(configuration: configuration)
        let events = manager.events()
        let watcher = Task {
            for await event in events {
                if case .progress(let download) = event { progress(download) }
            }
        }
        let result: Result<DownloadOutcome, any Error>
        do {
            result = .success(try await manager.download(request))
        } catch {
            result = .failure(error)
        }
        try? await manager.shutdown()
        await watcher.value
        return try result.get().download
    }
}
