import SwoopConsole
import SwoopKit

/// Turns download events into progress lines: live on a terminal (about ten redraws a second),
/// plain lines at most once a second otherwise.
struct ProgressPrinter: Sendable {
    let console: Console

    func consume(_ events: AsyncStream<DownloadEvent>) async {
        let interval: Duration = console.isTerminal ? .milliseconds(100) : .seconds(1)
        var lastDrawn: ContinuousClock.Instant?
        for await event in events {
            switch event {
            case .started(let download):
                lastDrawn = .now
                console.progress(Self.line(for: download), for: download.id)
            case .progress(let download):
                let now = ContinuousClock.now
                if let last = lastDrawn, now - last < interval { continue }
                lastDrawn = now
                console.progress(Self.line(for: download), for: download.id)
            case .notice(_, let message):
                console.notice(message)
            case .completed(let download), .alreadyComplete(let download), .failed(let download, _), .paused(let download),
                .removed(let download):
                console.finish(download.id)
            case .added:
                break
            }
        }
    }

    /// "name  45.2%  452 MiB / 1.00 GiB  812 MiB/s  ETA 1s", or without percent and ETA when the
    /// length is unknown.
    static func line(for download: Download) -> String {
        ProgressBoard.plainLine(for: download)
    }
}
