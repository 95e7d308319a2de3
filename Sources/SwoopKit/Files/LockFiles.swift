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
///
/// A lock file removed (and made again by another process) while locks are held in it: the open
/// descriptor still locks the removed file, where no other process looks. So each lock first checks
/// that the path still names the file open here (one `stat`); when it does not, the file now at the
/// path is opened beside the old one, which stays open until its last lock is let go.
final class LockFiles: Sendable {
    static let shared = LockFiles()

    private struct File {
        var fd: Int32
        var device: UInt64
        var inode: UInt64
        var held: Set<off_t> = []
    }

    /// For each path, the files opened there, the one the path named last at the end.
    private let files = NIOLockedValueBox<[String: [File]]>([:])

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
            var opened = files[path] ?? []
            if opened.contains(where: { $0.held.contains(lock.l_start) }) { return .heldHere }
            var file: File
            var status = stat()
            if let current = opened.last, stat(path, &status) == 0,
                UInt64(status.st_dev) == current.device, UInt64(status.st_ino) == current.inode
            {
                file = opened.removeLast()
            } else {
                let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
                guard fd >= 0 else { throw SwoopError.fileSystem("open lock file", path: path, errno: errno) }
                guard fstat(fd, &status) == 0 else {
                    let code = errno
                    _ = Glibc.close(fd)
                    throw SwoopError.fileSystem("open lock file", path: path, errno: code)
                }
                file = File(fd: fd, device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
            }
            var request = lock
            guard fcntl(file.fd, DownloadLock.ofdSetLock, &request) == 0 else {
                let code = errno
                var bytes = [UInt8](repeating: 0, count: 8)
                let n = pread(file.fd, &bytes, 8, pidSlot)
                if file.held.isEmpty { _ = Glibc.close(file.fd) } else { opened.append(file) }
                files[path] = opened.isEmpty ? nil : opened
                guard code == EAGAIN || code == EACCES else { throw SwoopError.fileSystem("lock", path: path, errno: code) }
                return .heldElsewhere(pid: n == 8 ? bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } : 0)
            }
            let pid = UInt64(DownloadLock.pid)
            let bytes = (0..<8).map { UInt8(truncatingIfNeeded: pid >> (56 - 8 * UInt64($0))) }
            _ = pwrite(file.fd, bytes, 8, pidSlot)
            file.held.insert(lock.l_start)
            opened.append(file)
            files[path] = opened
            return .taken
        }
    }

    /// Lets `byte` of the file at `path` go (explicitly: see ``DownloadLock/release()``), and closes
    /// the file it was held in when it was the last byte held there.
    func unlock(_ byte: off_t, in path: String) {
        files.withLockedValue { files in
            guard var opened = files[path], let index = opened.firstIndex(where: { $0.held.contains(byte) }) else { return }
            var lock = flock()
            lock.l_type = Int16(F_UNLCK)
            lock.l_whence = Int16(SEEK_SET)
            lock.l_start = byte
            lock.l_len = 1
            _ = fcntl(opened[index].fd, DownloadLock.ofdSetLock, &lock)
            opened[index].held.remove(byte)
            if opened[index].held.isEmpty {
                _ = Glibc.close(opened[index].fd)
                opened.remove(at: index)
            }
            files[path] = opened.isEmpty ? nil : opened
        }
    }

    /// How many files opened at `path` are open here (for tests).
    func openCount(at path: String) -> Int {
        files.withLockedValue { $0[path]?.count ?? 0 }
    }

    /// The open descriptor holding `byte` of the file at `path` (for tests).
    func descriptor(of path: String, holding byte: off_t) -> Int32? {
        files.withLockedValue { $0[path]?.first { $0.held.contains(byte) }?.fd }
    }
}
