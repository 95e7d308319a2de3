import Foundation

/// Starts child processes one at a time. Foundation's `Process.run()` on Linux was seen to crash
/// (a bad read inside it) while tests on other threads started processes too; the start is short,
/// so the children still run side by side.
public enum ChildProcess {
    nonisolated(unsafe) private static let starting = NSLock()  // NSLock is thread-safe

    public static func run(_ process: Process) throws {
        starting.lock()
        defer { starting.unlock() }
        try process.run()
    }
}
