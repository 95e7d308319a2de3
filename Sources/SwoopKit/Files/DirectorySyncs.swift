import NIOConcurrencyHelpers

/// The directories a manager renamed finished files into and has not flushed yet.
///
/// A rename needs no directory `fsync` of its own: the completion is recorded durably first, and the
/// next run redoes a rename a power loss took back. So each directory is flushed once, when the
/// manager shuts down. One set per manager, so that two managers in one process (a daemon's tests)
/// flush only their own.
final class DirectorySyncs: Sendable {
    private let pending = NIOLockedValueBox(Set<String>())

    /// Notes that a file was renamed into `directory`.
    func add(_ directory: String) {
        pending.withLockedValue { _ = $0.insert(directory) }
    }

    /// Flushes every noted directory and forgets them.
    func syncAll() {
        let directories = pending.withLockedValue { pending in
            defer { pending.removeAll() }
            return pending
        }
        for directory in directories.sorted() { FileSystem.syncDirectory(directory) }
    }
}
