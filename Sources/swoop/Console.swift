import Foundation
import NIOConcurrencyHelpers
import SwoopKit

#if canImport(Glibc)
import Glibc
#endif

/// All terminal output goes through here: one lock, so a live progress line is cleared before any
/// other line is printed and is never redrawn for a download that has already finished.
final class Console: Sendable {
    let quiet: Bool
    let isTerminal: Bool
    private let state = NIOLockedValueBox(State())

    private struct State {
        var lineOpen = false
        var finished: Set<Download.ID> = []
    }

    init(quiet: Bool) {
        self.quiet = quiet
        self.isTerminal = isatty(STDOUT_FILENO) == 1
    }

    /// The terminal's width in columns (80 when unknown).
    var width: Int {
        var size = winsize()
        guard isTerminal, ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// Redraws the live progress line (terminal) or prints a progress line (otherwise).
    func progress(_ line: String, for id: Download.ID) {
        guard !quiet else { return }
        state.withLockedValue { state in
            guard !state.finished.contains(id) else { return }
            if isTerminal {
                write("\r\u{1B}[K" + String(line.prefix(max(width - 1, 10))), to: STDOUT_FILENO)
                state.lineOpen = true
            } else {
                write(line + "\n", to: STDOUT_FILENO)
            }
        }
    }

    /// Marks a download finished: no more progress lines for it.
    func finish(_ id: Download.ID) {
        state.withLockedValue { _ = $0.finished.insert(id) }
    }

    /// The result line of a download (stdout).
    func result(_ line: String) { emit(line, to: STDOUT_FILENO, always: false) }

    /// Something worth knowing that is not an error (stderr).
    func notice(_ line: String) { emit("swoop: " + line, to: STDERR_FILENO, always: false) }

    func warning(_ line: String) { emit("swoop: warning: " + line, to: STDERR_FILENO, always: true) }

    /// An error: always printed, even with `-q` (stderr).
    func error(_ line: String) { emit("swoop: error: " + line, to: STDERR_FILENO, always: true) }

    private func emit(_ line: String, to stream: Int32, always: Bool) {
        guard always || !quiet else { return }
        state.withLockedValue { state in
            if state.lineOpen {
                write("\r\u{1B}[K", to: STDOUT_FILENO)
                state.lineOpen = false
            }
            write(line + "\n", to: stream)
        }
    }

    private func write(_ text: String, to fd: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            bytes = bytes.dropFirst(n)
        }
    }
}
