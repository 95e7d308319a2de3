/// Counts and speed for a status line.
public struct DownloadStats: Sendable, Hashable, Codable {
    /// Transferring now.
    public var active: Int
    /// In this manager's queue, not started.
    public var waiting: Int
    /// Finished in this manager's life: completed (or already complete), failed, and otherwise
    /// stopped (paused, cancelled, removed).
    public var completed: Int
    public var failed: Int
    public var stopped: Int
    /// The sum of the running downloads' speeds.
    public var bytesPerSecond: Double
    /// The current limit on downloads at once.
    public var maxConcurrentDownloads: Int
}

/// What this manager's downloads came to so far (for ``DownloadStats``).
struct SessionCounts {
    var completed = 0
    var failed = 0
    var stopped = 0
}
