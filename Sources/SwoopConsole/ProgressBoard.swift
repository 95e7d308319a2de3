import Foundation
import SwoopKit

/// The counts and totals under the download lines of a ``ProgressBoard``.
public struct BoardSummary: Sendable, Hashable {
    /// Downloads finished in this run (including ones that were already complete).
    public var done: Int
    /// Downloads transferring now.
    public var active: Int
    /// Downloads queued and not started yet.
    public var waiting: Int
    /// Downloads that stopped with an error.
    public var failed: Int
    /// The speed of all active downloads together.
    public var bytesPerSecond: Double
    /// The bytes the active and waiting downloads still need, or `nil` when unknown.
    public var remainingBytes: Int?
    /// Downloads waiting to retry after a failed attempt (not counted in `active`).
    public var retrying: Int
    /// `remainingBytes` counts waiting downloads of unknown length at the average length seen so
    /// far: the ETA is shown as an estimate (`ETA ~1m12s`).
    public var remainingIsEstimate: Bool
    /// The longest time a running download still needs at its own speed: the whole can end no
    /// sooner (the total speed shared out evenly would say so, with one download held by its own
    /// rate limit).
    public var longestRemainingSeconds: Double?

    /// Creates a summary.
    public init(
        done: Int = 0, active: Int = 0, waiting: Int = 0, failed: Int = 0, bytesPerSecond: Double = 0,
        remainingBytes: Int? = nil, retrying: Int = 0, remainingIsEstimate: Bool = false, longestRemainingSeconds: Double? = nil
    ) {
        self.remainingIsEstimate = remainingIsEstimate
        self.longestRemainingSeconds = longestRemainingSeconds
        self.done = done
        self.active = active
        self.waiting = waiting
        self.failed = failed
        self.bytesPerSecond = bytesPerSecond
        self.remainingBytes = remainingBytes
        self.retrying = retrying
    }
}

/// Renders the multi-download progress display: one line per active download and a summary line,
/// every line fitting the terminal. Pure: the same input always gives the same lines.
///
/// A download line is `name  45.2%  452 MiB / 1.00 GiB  812 MiB/s  ETA 1s`, or
/// `name  452 MiB  812 MiB/s` when the length is unknown. When a line is too wide the name is
/// cut in the middle first (down to ``minimumNameWidth``), then the ETA, the speed and the sizes
/// are dropped in that order, and only then is the name cut further.
public struct ProgressBoard: Sendable, Hashable {
    /// The terminal's width in columns; lines take at most `width - 1` so none wraps.
    public var width: Int
    /// The most download lines; more active downloads collapse into one `… and N more active` line.
    public var maxDownloadLines: Int

    /// Names are cut to no fewer columns than this before fields are dropped.
    public static let minimumNameWidth = 10

    /// Creates a board for a terminal.
    ///
    /// - Parameters:
    ///   - width: The terminal's width in columns.
    ///   - maxDownloadLines: The most download lines (at least 1 is used).
    public init(width: Int, maxDownloadLines: Int = 10) {
        self.width = width
        self.maxDownloadLines = maxDownloadLines
    }

    /// A board whose region fits a terminal of `height` rows: at most 10 download lines, and
    /// always room for the `… and N more` line, the summary and the line being typed under them.
    public init(width: Int, height: Int) {
        self.init(width: width, maxDownloadLines: min(10, max(1, height - 3)))
    }

    /// The columns a line may take.
    public var limit: Int { max(1, width - 1) }

    /// The lines to show, top to bottom.
    ///
    /// - Parameters:
    ///   - active: Snapshots of the active downloads, in the order they started.
    ///   - summary: The counts and totals for the last line.
    /// - Returns: One line per active download (capped), then the summary line.
    ///
    /// The summary line is left out when the board concerns a single download (nothing is
    /// waiting, done or failed besides it): its own line says everything.
    public func lines(active: [Download], summary: BoardSummary) -> [String] {
        let cap = max(1, maxDownloadLines)
        var lines = active.prefix(cap).map { downloadLine($0) }
        if active.count > cap {
            lines.append(DisplayWidth.clipped("… and \(active.count - cap) more active", to: limit))
        }
        if summary.done + summary.failed + summary.waiting + max(summary.active, active.count) > 1 || active.isEmpty {
            lines.append(summaryLine(summary))
        }
        return lines
    }

    /// The line of one download, fitting ``limit``.
    public func downloadLine(_ download: Download) -> String {
        let name = Self.name(of: download)
        let fields = Self.fields(of: download)
        // Most wanted first: everything, then without ETA, without speed, without sizes.
        var variants: [[String]] = [fields.required + fields.optional]
        for count in fields.optional.indices.reversed() {
            variants.append(fields.required + fields.optional.prefix(count))
        }
        if let percent = fields.required.first, fields.required.count > 1 { variants.append([percent]) }

        let nameWidth = DisplayWidth.of(name)
        for variant in variants {
            let rest = variant.map { "  " + $0 }.joined()
            let room = limit - DisplayWidth.of(rest)
            if room >= min(nameWidth, Self.minimumNameWidth) {
                return DisplayWidth.middleTruncated(name, to: room) + rest
            }
        }
        let rest = (variants.last ?? []).map { "  " + $0 }.joined()
        let room = max(1, limit - DisplayWidth.of(rest))
        return DisplayWidth.clipped(DisplayWidth.middleTruncated(name, to: room) + rest, to: limit)
    }

    /// The summary line, fitting ``limit``: `[done 12 · active 4 · waiting 184 · failed 1]  38.2 MiB/s  ETA 1m12s`.
    ///
    /// Narrower: the ETA and then the speed are dropped, keeping the words; only when the words
    /// alone do not fit do the counts become `[d12 a4 w184 f1]` (with the speed and ETA again when
    /// they fit beside that).
    /// The ETA is shown only when some bytes remain and their number is known (`--` at zero speed),
    /// with `~` when that number is an estimate; never sooner than the slowest running download's own.
    public func summaryLine(_ summary: BoardSummary) -> String {
        let s = summary
        // Retrying downloads are counted only while there are some.
        let retrying = s.retrying > 0 ? (" · retrying \(s.retrying)", " r\(s.retrying)") : ("", "")
        let long = "[done \(s.done) · active \(s.active)\(retrying.0) · waiting \(s.waiting) · failed \(s.failed)]"
        let short = "[d\(s.done) a\(s.active)\(retrying.1) w\(s.waiting) f\(s.failed)]"
        let speed = ByteFormatting.rate(s.bytesPerSecond)
        let remaining = s.remainingBytes.flatMap { $0 > 0 ? $0 : nil }
        let estimate = s.remainingIsEstimate && s.bytesPerSecond > 0 ? "~" : ""
        let eta = remaining.map { remaining in
            guard s.bytesPerSecond > 0 else { return "ETA " + Self.eta(remaining: remaining, bytesPerSecond: 0) }
            let seconds = max(Double(remaining) / s.bytesPerSecond, s.longestRemainingSeconds ?? 0)
            return "ETA " + estimate + ByteFormatting.duration(seconds)
        }
        let tail = [speed] + (eta.map { [$0] } ?? [])
        let variants: [[String]] = [[long] + tail, [long, speed], [long], [short] + tail, [short, speed], [short]]
        for variant in variants {
            let line = variant.joined(separator: "  ")
            if DisplayWidth.of(line) <= limit { return line }
        }
        return DisplayWidth.clipped(short, to: limit)
    }

    /// The full, uncut progress line of a download, for output that is not a terminal:
    /// `name  45.2%  452 MiB / 1.00 GiB  812 MiB/s  ETA 1s`.
    public static func plainLine(for download: Download) -> String {
        let fields = fields(of: download)
        return ([name(of: download)] + fields.required + fields.optional).joined(separator: "  ")
    }

    /// The file name of the destination, or, while the name is not known yet (before the first
    /// answer), the name the URL suggests (as wget shows it); controls replaced.
    static func name(of download: Download) -> String {
        let name: String
        if let destination = download.destination {
            name = String(destination.split(separator: "/").last ?? "")
        } else if let url = URL(string: download.url) {
            name = FileNaming.suggestedName(contentDisposition: nil, url: url)
        } else {
            name = download.url
        }
        return DisplayWidth.sanitized(name)
    }

    /// The fields after the name: the ones always shown and the ones dropped first, last first.
    static func fields(of download: Download) -> (required: [String], optional: [String]) {
        let done = ByteFormatting.format(download.completedBytes)
        let speed = ByteFormatting.rate(download.bytesPerSecond)
        // Waiting to retry: which retry (kept) and why (dropped first), in place of the speed and ETA.
        if let retry = download.retry {
            let which = "retry \(retry.attempt)/\(retry.maxRetries)"
            guard let total = download.totalBytes, let fraction = download.fractionCompleted else {
                return ([done, which], [retry.reason])
            }
            let percent = (fraction * 1000).rounded(.down) / 10
            return (["\(percent)%", "\(done) / \(ByteFormatting.format(total))", which], [retry.reason])
        }
        guard let total = download.totalBytes, let fraction = download.fractionCompleted else {
            return ([done], [speed])
        }
        let percent = (fraction * 1000).rounded(.down) / 10
        let eta = eta(remaining: total - download.completedBytes, bytesPerSecond: download.bytesPerSecond)
        // A download split over several connections says how many are live, after its speed.
        let connections = download.connections > 1 ? ["×\(download.connections)"] : []
        return (["\(percent)%", "\(done) / \(ByteFormatting.format(total))"], [speed] + connections + ["ETA \(eta)"])
    }

    static func eta(remaining: Int, bytesPerSecond: Double) -> String {
        guard remaining > 0 else { return "0s" }
        return bytesPerSecond > 0 ? ByteFormatting.duration(Double(remaining) / bytesPerSecond) : "--"
    }
}
