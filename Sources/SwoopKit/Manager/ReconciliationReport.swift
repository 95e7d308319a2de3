/// What ``DownloadManager/reconcile()`` found and did.
public struct ReconciliationReport: Sendable, Hashable {
    /// Downloads a dead process left active, now waiting again.
    public var recovered: [Download.ID] = []
    /// Completed downloads whose part file a stopped process had not yet renamed; renamed now.
    public var published: [Download.ID] = []
    /// Completed downloads whose file is gone or changed (marked in their error).
    public var changedFiles: [Download.ID] = []
    /// Part files no download record owns; left in place.
    public var orphanedPartFiles: [String] = []
    /// Finished records forgotten under the history limits.
    public var forgotten = 0
}
