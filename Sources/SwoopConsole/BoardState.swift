import SwoopKit

/// What the board shows, kept up to date from download events: the active downloads in the
/// order they started and the counts of finished and failed ones. Pure; ``BoardPrinter`` owns one.
public struct BoardState: Sendable, Hashable {
    /// The active downloads' latest snapshots, in the order they started.
    public private(set) var active: [Download] = []
    /// Downloads completed (or found already complete) so far.
    public private(set) var done = 0
    /// Downloads that stopped with an error so far.
    public private(set) var failed = 0

    /// An empty state.
    public init() {}

    /// Applies one event.
    ///
    /// - Returns: Whether the board changed and should be drawn again.
    @discardableResult
    public mutating func apply(_ event: DownloadEvent) -> Bool {
        switch event {
        case .started(let download), .progress(let download):
            update(download)
        case .notice(let download, _):
            guard let index = index(of: download.id) else { return false }
            active[index] = download
        case .completed(let download), .alreadyComplete(let download):
            remove(download.id)
            done += 1
        case .failed(let download, _):
            remove(download.id)
            failed += 1
        case .paused(let download), .removed(let download):
            remove(download.id)
        case .added:
            // Nothing shown changes: the waiting count comes from the manager.
            return false
        }
        return true
    }

    /// The summary line's values.
    ///
    /// - Parameter waiting: The number of queued downloads, which events do not carry.
    public func summary(waiting: Int) -> BoardSummary {
        var remaining: Int? = 0
        for download in active {
            guard let total = download.totalBytes, let sum = remaining else {
                remaining = nil
                break
            }
            remaining = sum + max(0, total - download.completedBytes)
        }
        return BoardSummary(
            done: done, active: active.count, waiting: waiting, failed: failed,
            bytesPerSecond: active.reduce(0) { $0 + max(0, $1.bytesPerSecond) }, remainingBytes: remaining
        )
    }

    private func index(of id: Download.ID) -> Int? {
        active.firstIndex { $0.id == id }
    }

    /// Replaces a download's snapshot in place, or appends it: a restarted download keeps its line.
    private mutating func update(_ download: Download) {
        if let index = index(of: download.id) {
            active[index] = download
        } else {
            active.append(download)
        }
    }

    private mutating func remove(_ id: Download.ID) {
        active.removeAll { $0.id == id }
    }
}
