import SwoopKit

/// What the board shows, kept up to date from download events alone: the active downloads in the
/// order they started, the waiting ones, and the counts of finished and failed ones. Pure;
/// ``BoardPrinter`` owns one.
public struct BoardState: Sendable, Hashable {
    /// The active downloads' latest snapshots, in the order they started.
    public private(set) var active: [Download] = []
    /// Downloads completed (or found already complete) so far.
    public private(set) var done = 0
    /// Downloads that stopped with an error so far.
    public private(set) var failed = 0
    /// Downloads added or expected that have neither started nor ended, with what each still
    /// needs when its `added` snapshot knew its length.
    private var waitingRemaining: [Download.ID: Int?] = [:]
    /// The sum of the known remaining bytes of the waiting downloads, and how many have none known:
    /// kept as they change, so a redraw costs nothing per waiting download.
    private var waitingBytes = 0
    private var waitingUnknown = 0
    /// Downloads that started or ended: an `added` or an expectation that comes later does not
    /// make them wait again.
    private var begun: Set<Download.ID> = []
    /// The lengths of the downloads that finished so far (and how many), for an estimate of the
    /// waiting downloads whose lengths are not known yet.
    private var finishedBytes = 0
    private var finishedWithLength = 0

    /// An empty state.
    public init() {}

    /// Applies one event.
    ///
    /// - Returns: Whether the board changed and should be drawn again.
    @discardableResult
    public mutating func apply(_ event: DownloadEvent) -> Bool {
        if case .added(let download) = event {
            return startWaiting(download.id, remaining: download.totalBytes.map { max(0, $0 - download.completedBytes) })
        }
        if case .notice = event {} else { begin(event.download.id) }
        switch event {
        case .started(let download), .progress(let download):
            update(download)
        case .notice(let download, _):
            // A download waiting to retry has a line (with the retry), even before its first start.
            if download.retry != nil {
                begin(download.id)
                update(download)
                return true
            }
            guard let index = index(of: download.id) else { return false }
            active[index] = download
        case .completed(let download), .alreadyComplete(let download):
            remove(download.id)
            done += 1
            if let total = download.totalBytes {
                finishedBytes += total
                finishedWithLength += 1
            }
        case .failed(let download, _):
            remove(download.id)
            failed += 1
        case .paused(let download), .removed(let download):
            remove(download.id)
        case .added:
            return false
        }
        return true
    }

    /// Counts downloads as waiting that will run without an `added` event (resumed ones), unless
    /// they started or ended already.
    ///
    /// - Returns: Whether the board changed.
    @discardableResult
    public mutating func expect(_ ids: some Sequence<Download.ID>) -> Bool {
        var changed = false
        for id in ids {
            changed = startWaiting(id, remaining: nil) || changed
        }
        return changed
    }

    /// Downloads added or expected that have neither started nor ended.
    public var waiting: Set<Download.ID> { Set(waitingRemaining.keys) }

    /// Counts `id` as waiting unless it began already. Returns whether it was not waiting before.
    private mutating func startWaiting(_ id: Download.ID, remaining: Int?) -> Bool {
        guard !begun.contains(id), waitingRemaining[id] == nil else { return false }
        waitingRemaining[id] = .some(remaining)
        if let remaining { waitingBytes += remaining } else { waitingUnknown += 1 }
        return true
    }

    /// `id` started or ended: it waits no more, and a later `added` or expectation does not make it wait.
    private mutating func begin(_ id: Download.ID) {
        begun.insert(id)
        guard let entry = waitingRemaining.removeValue(forKey: id) else { return }
        if let remaining = entry { waitingBytes -= remaining } else { waitingUnknown -= 1 }
    }

    /// The summary line's values. The remaining bytes are the active downloads' and the waiting
    /// ones' (the `added` snapshot of a download seen before has its length; an expected one's is
    /// unknown). A waiting download of unknown length counts as the average length of the
    /// downloads finished or running so far, and the remaining bytes are then an estimate; with
    /// no length known at all, or an active download's unknown, they are unknown: the ETA of the
    /// running downloads alone would say "0s" while others wait.
    public func summary() -> BoardSummary {
        var remaining: Int? = 0
        var seenBytes = finishedBytes
        var seenWithLength = finishedWithLength
        for download in active {
            guard let total = download.totalBytes, let sum = remaining else {
                remaining = nil
                break
            }
            remaining = sum + max(0, total - download.completedBytes)
            seenBytes += total
            seenWithLength += 1
        }
        let longest = active.compactMap { download -> Double? in
            guard let total = download.totalBytes, download.bytesPerSecond > 0 else { return nil }
            return Double(max(0, total - download.completedBytes)) / download.bytesPerSecond
        }.max()
        var estimated = false
        if let sum = remaining {
            if waitingUnknown == 0 {
                remaining = sum + waitingBytes
            } else if seenWithLength > 0 {
                remaining = sum + waitingBytes + waitingUnknown * (seenBytes / seenWithLength)
                estimated = true
            } else {
                remaining = nil
            }
        }
        let retrying = active.filter { $0.retry != nil }.count
        return BoardSummary(
            done: done, active: active.count - retrying, waiting: waitingRemaining.count, failed: failed,
            bytesPerSecond: active.reduce(0) { $0 + max(0, $1.bytesPerSecond) }, remainingBytes: remaining, retrying: retrying,
            remainingIsEstimate: estimated, longestRemainingSeconds: longest
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
