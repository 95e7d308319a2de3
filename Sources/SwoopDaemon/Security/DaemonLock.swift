import Foundation

/// One daemon per state directory: a lock on `daemon.lock` held for the daemon's life (the kernel
/// drops it when the process dies, however it dies).
public final class DaemonLock: Sendable {
    private let fd: Int32

    private init(fd: Int32) {
        self.fd = fd
    }

    /// Takes the lock of `stateDirectory`.
    ///
    /// - Throws: ``DaemonError`` naming the daemon that holds it, or why the file cannot be opened.
    public static func acquire(in stateDirectory: String) throws -> DaemonLock {
        let path = path(in: stateDirectory)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw DaemonError("cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            let running = DaemonAddress.read(in: stateDirectory).map { " (pid \($0.pid), \($0.url))" } ?? ""
            throw DaemonError("a swoop daemon already runs on \(stateDirectory)\(running): stop it first, or give another --state-dir", isInUse: true)
        }
        return DaemonLock(fd: fd)
    }

    /// The lock file of a state directory.
    static func path(in stateDirectory: String) -> String {
        stateDirectory + "/daemon.lock"
    }

    /// Whether a daemon holds the lock of `stateDirectory` now (looked at without keeping it).
    public static func isHeld(in stateDirectory: String) -> Bool {
        let fd = open(path(in: stateDirectory), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_SH | LOCK_NB) == 0 else { return true }
        flock(fd, LOCK_UN)
        return false
    }

    deinit {
        close(fd)
    }
}
