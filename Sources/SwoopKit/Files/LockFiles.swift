import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The lock files this process holds downloads' locks in (``DownloadLock``): one open descriptor per
/// file, shared by every lock held in it and closed when the last is let go, and the bytes held.
///
/// One descriptor rather than one per lock: thousands of small downloads each spent an `open` and a
/// `close` of the lock file. The locks of one open file description never conflict with each other,
/// so the bytes held are also kept here: a second run of a download in this process is refused as
/// another process's would be.
final class LockFiles: Sendable {
    static let shared = LockFiles()

    private struct File {
        var fd: Int32
        var held: Set<off_t> = []
    }

    private let files = NIOLockedValueBox<[String: File]>([:])

    enum Outcome: Equatable {
        case taken
        /// Held by another lock of this process.
        case heldHere
        /// Held by another process, which wrote this pid into the slot (0 when unreadable).
        case heldElsewhere(pid: UInt64)
    }

    /// Takes `lock`'s byte in the file at `path` (made if missing) and writes this process's pid
    /// into the slot at `pidSlot`; or says who holds it.
    func lock(_ lock: flock, pidSlot: off_t, in path: String) throws -> Outcome {
        try files.withLockedValue { files in
            if files[path]?.held.contains(lock.l_start) == true { return .heldHere }
            var file: File
            if let open = files[path] {
                file = open
            } else {
                let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
                guard fd >= 0 else { throw SwoopError.fileSystem("open lock file", path: path, errno: errno) }
                file = File(fd: fd)
            }
            var request = lock
            guard fcntl(file.fd, DownloadLock.ofdSetLock, &request) == 0 else {
                let code = errno
                var bytes = [UInt8](repeating: 0, count: 8)
                let n = pread(file.fd, &bytes, 8, pidSlot)
                if file.held.isEmpty { _ = Glibc.close(file.fd) }
                guard code == EAGAIN || code == EACCES else { throw SwoopError.fileSystem("lock", path: path, errno: code) }
                return .heldElsewhere(pid: n == 8 ? bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } : 0)
            }
            let pid = UInt64(DownloadLock.pid)
            let bytes = (0..<8).map { UInt8(truncatingIfNeeded: pid >> (56 - 8 * UInt64($0))) }
            _ = pwrite(file.fd, bytes, 8, pidSlot)
            file.held.insert(lock.l_start)
            files[path] = file
            return .taken
        }
    }

    /// Lets `byte` of the file at `path` go (explicitly: see ``DownloadLock/release()``), and closes
    /// the file when it was the last byte held there.
    func unlock(_ byte: off_t, in path: String) {
        files.withLockedValue { files in
            guard var file = files[path], file.held.remove(byte) != nil else { return }
            var lock = flock()
            lock.l_type = Int16(F_UNLCK)
            lock.l_whence = Int16(SEEK_SET)
            lock.l_start = byte
            lock.l_len = 1
            _ = fcntl(file.fd, DownloadLock.ofdSetLock, &lock)
            if file.held.isEmpty {
                _ = Glibc.close(file.fd)
                files[path] = nil
            } else {
                files[path] = file
            }
        }
    }

    /// The open descriptor of the file at `path`, while a lock is held in it (for tests).
    func descriptor(of path: String) -> Int32? {
        files.withLockedValue { $0[path]?.fd }
    }
}
