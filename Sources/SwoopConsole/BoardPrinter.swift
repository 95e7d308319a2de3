import NIOConcurrencyHelpers
import SwoopKit

/// Shows the progress of many downloads from their events.
///
/// On a terminal (stderr): a ``ProgressBoard`` (one line per active download and a summary line)
/// redrawn in place at most once per `refreshInterval`, with notices and results printed above it.
/// Otherwise: plain progress lines on stderr, at most one a second per download, and none for a
/// download that is done within its first second (its result line says all).
public final class BoardPrinter: Sendable {
    private let console: Console
    private let refreshInterval: Duration
    private let state = NIOLockedValueBox(State())

    private struct State {
        var board = BoardState()
        /// Something changed since the board was last drawn.
        var dirty = false
        /// When each download's last plain line was printed (or, before the first, when it started).
        var lastPlainLine: [Download.ID: ContinuousClock.Instant] = [:]
    }

    /// Creates a printer writing to `console`.
    ///
    /// - Parameters:
    ///   - console: Where the board or the plain lines go.
    ///   - refreshInterval: The shortest time between two redraws of the board.
    public init(console: Console, refreshInterval: Duration = .milliseconds(100)) {
        self.console = console
        self.refreshInterval = refreshInterval
    }

    /// Counts downloads as waiting that will run without an `added` event (resumed ones) until
    /// their events say otherwise.
    public func expect(_ ids: [Download.ID]) {
        state.withLockedValue { state in
            if state.board.expect(ids) { state.dirty = true }
        }
    }

    /// Prints progress until `events` ends, then erases the board.
    ///
    /// - Parameter events: The manager's events.
    public func consume(_ events: DownloadEvents) async {
        guard console.isTerminal else {
            for await event in events { handlePlain(event) }
            return
        }
        await withDiscardingTaskGroup { group in
            group.addTask { await self.redrawWhileRunning() }
            for await event in events {
                if case .notice(_, let message) = event { console.notice(message) }
                state.withLockedValue { state in
                    if state.board.apply(event) { state.dirty = true }
                }
            }
            group.cancelAll()
        }
        console.board([])
    }

    /// The lines the board would show now on a terminal of this size.
    public func lines(width: Int, height: Int) -> [String] {
        board(width: width, height: height).lines
    }

    /// The lines the board would show now, and the downloads its first lines show.
    private func board(width: Int, height: Int) -> (lines: [String], ids: [Download.ID]) {
        let board = state.withLockedValue { $0.board }
        let layout = ProgressBoard(width: width, height: height)
        return (layout.lines(active: board.active, summary: board.summary()), board.active.prefix(max(1, layout.maxDownloadLines)).map(\.id))
    }

    /// Draws the board whenever it changed, at most once per `refreshInterval`, until cancelled.
    private func redrawWhileRunning() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: refreshInterval)
            let changed = state.withLockedValue { state in
                defer { state.dirty = false }
                return state.dirty
            }
            if changed && !Task.isCancelled {
                let (lines, ids) = board(width: console.width, height: console.height)
                console.board(lines, ids: ids)
            }
        }
    }

    /// Not a terminal: the first line a second after a download starts, then at most one a second.
    private func handlePlain(_ event: DownloadEvent) {
        let now = ContinuousClock.now
        switch event {
        case .started(let download):
            // A restart keeps its clock: the first line is still due a second after the first start.
            state.withLockedValue { state in
                if state.lastPlainLine[download.id] == nil { state.lastPlainLine[download.id] = now }
            }
        case .progress(let download):
            let due = state.withLockedValue { state in
                guard let last = state.lastPlainLine[download.id] else {
                    state.lastPlainLine[download.id] = now
                    return false
                }
                guard now - last >= .seconds(1) else { return false }
                state.lastPlainLine[download.id] = now
                return true
            }
            if due { console.progress(ProgressBoard.plainLine(for: download), for: download.id) }
        case .notice(_, let message):
            console.notice(message)
        case .completed(let download), .alreadyComplete(let download), .failed(let download, _), .paused(let download),
            .removed(let download):
            state.withLockedValue { _ = $0.lastPlainLine.removeValue(forKey: download.id) }
        case .added:
            break
        }
    }
}
