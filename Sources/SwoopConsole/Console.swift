import Foundation
import NIOConcurrencyHelpers
import SwoopKit

#if canImport(Glibc)
import Glibc
#endif

/// All terminal output goes through here, under one lock: a live progress line or board is
/// cleared before any other line is printed and drawn again below it, and no progress is shown
/// for a download that has already finished.
///
/// Progress goes to standard error, as curl and wget draw theirs: standard output holds only
/// results (and, with `--json`, only JSON objects), so it can be piped as it is.
///
/// Use either the single live line (``progress(_:for:)``) or the board (``board(_:)``), not both.
public final class Console: Sendable {
    /// Print only errors and warnings.
    public let quiet: Bool
    /// Standard error is a terminal: progress is redrawn in place; otherwise it is plain lines.
    public let isTerminal: Bool
    private let state = NIOLockedValueBox(State())

    private struct State {
        /// The single live line (``progress(_:for:)``) is on screen, the cursor at its end.
        var lineOpen = false
        /// The board's lines on screen, the cursor at the end of the last one.
        var region: [String] = []
        /// The downloads the first lines of `region` show, in order (the rest show none).
        var regionIDs: [Download.ID] = []
        var finished: Set<Download.ID> = []

        /// `lines` (the first of them showing `ids`) without those of finished downloads.
        func unfinished(_ lines: [String], ids: [Download.ID]) -> (lines: [String], ids: [Download.ID]) {
            guard ids.contains(where: finished.contains) else { return (lines, ids) }
            var kept: [String] = []
            var keptIDs: [Download.ID] = []
            for (index, line) in lines.enumerated() {
                if index < ids.count {
                    guard !finished.contains(ids[index]) else { continue }
                    keptIDs.append(ids[index])
                }
                kept.append(line)
            }
            return (kept, keptIDs)
        }

        /// The board as it may be drawn again now: without the lines of downloads finished since
        /// it was drawn (their result line is printed above it; their last progress is stale).
        mutating func currentRegion() -> [String] {
            (region, regionIDs) = unfinished(region, ids: regionIDs)
            return region
        }
    }

    /// Creates the console of this process.
    ///
    /// - Parameter quiet: Print only errors and warnings.
    public init(quiet: Bool) {
        self.quiet = quiet
        self.isTerminal = isatty(STDERR_FILENO) == 1
    }

    /// The terminal's width in columns (80 when unknown).
    public var width: Int { windowSize.width }

    /// The terminal's height in rows (24 when unknown).
    public var height: Int { windowSize.height }

    private var windowSize: (width: Int, height: Int) {
        var size = winsize()
        guard isTerminal, ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0 else { return (80, 24) }
        return (size.ws_col > 0 ? Int(size.ws_col) : 80, size.ws_row > 0 ? Int(size.ws_row) : 24)
    }

    /// Redraws the live progress line (terminal) or prints a progress line (otherwise), on stderr.
    ///
    /// - Parameters:
    ///   - line: The progress line; cut to the terminal's width.
    ///   - id: The download it is about; nothing is printed once it is ``finish(_:)``ed.
    public func progress(_ line: String, for id: Download.ID) {
        guard !quiet else { return }
        state.withLockedValue { state in
            guard !state.finished.contains(id) else { return }
            if isTerminal {
                write("\r\u{1B}[K" + String(line.prefix(max(width - 1, 10))), to: STDERR_FILENO)
                state.lineOpen = true
            } else {
                write(line + "\n", to: STDERR_FILENO)
            }
        }
    }

    /// Redraws the board, a block of lines at the bottom of the terminal (stderr), in place with one write.
    ///
    /// Does nothing when quiet or not on a terminal.
    ///
    /// - Parameters:
    ///   - lines: The lines, each fitting `width - 1` columns (``ProgressBoard`` makes such
    ///     lines); empty erases the board.
    ///   - ids: The downloads the first lines show, in order: a line of a download already
    ///     ``finish(_:)``ed is not drawn, here or when the board is drawn again below a line.
    public func board(_ lines: [String], ids: [Download.ID] = []) {
        guard isTerminal, !quiet else { return }
        state.withLockedValue { state in
            let (lines, ids) = state.unfinished(lines, ids: ids)
            state.regionIDs = ids
            var frame = ""
            if state.lineOpen {
                frame += "\r\u{1B}[K"
                state.lineOpen = false
            }
            frame += LiveRegion.frame(previousLineCount: state.region.count, lines: lines)
            defer { state.region = lines }
            guard !frame.isEmpty else { return }
            write(frame, to: STDERR_FILENO)
        }
    }

    /// Marks a download finished: no more progress lines for it.
    public func finish(_ id: Download.ID) {
        state.withLockedValue { _ = $0.finished.insert(id) }
    }

    /// Whether ``finish(_:)`` was called for a download.
    public func isFinished(_ id: Download.ID) -> Bool {
        state.withLockedValue { $0.finished.contains(id) }
    }

    /// The result line of a download (stdout).
    public func result(_ line: String) { emit(line, to: STDOUT_FILENO, always: false) }

    /// Something worth knowing that is not an error (stderr).
    public func notice(_ line: String) { emit("swoop: " + line, to: STDERR_FILENO, always: false) }

    /// Something that may be wrong: always printed, even with `-q` (stderr).
    public func warning(_ line: String) { emit("swoop: warning: " + line, to: STDERR_FILENO, always: true) }

    /// An error: always printed, even with `-q` (stderr).
    public func error(_ line: String) { emit("swoop: error: " + line, to: STDERR_FILENO, always: true) }

    /// Prints a whole line above the live line or board, which is drawn again below it.
    private func emit(_ line: String, to stream: Int32, always: Bool) {
        guard always || !quiet else { return }
        state.withLockedValue { state in
            if state.lineOpen {
                write("\r\u{1B}[K", to: STDERR_FILENO)
                state.lineOpen = false
            }
            if state.region.isEmpty {
                write(line + "\n", to: stream)
            } else if stream == STDERR_FILENO {
                let shown = state.region.count
                write(LiveRegion.printAbove(line + "\n", previousLineCount: shown, lines: state.currentRegion()), to: STDERR_FILENO)
            } else {
                // A result for stdout, which may be the same terminal: the board steps aside for it.
                write(LiveRegion.frame(previousLineCount: state.region.count, lines: []), to: STDERR_FILENO)
                write(line + "\n", to: stream)
                write(LiveRegion.frame(previousLineCount: 0, lines: state.currentRegion()), to: STDERR_FILENO)
            }
        }
    }

    /// Writes all of `text`; a failure (a closed pipe) drops the rest of that line, nothing more.
    private func write(_ text: String, to fd: Int32) {
        _ = Array(text.utf8).withUnsafeBytes { WriteAll.write(fd, $0) }
    }
}
