import Foundation
#if canImport(Glibc)
import Glibc
#endif
import GRDB
import SwoopKit

/// The database's write-ahead log (`PATH-wal`), opened only to `fsync` it. In WAL mode a commit
/// appends to the log; flushing the log after the commit is what `synchronous = FULL` would do.
final class WriteAheadLog: @unchecked Sendable {
    private let databasePath: String
    private let lock = NSLock()
    // Guarded by `lock`.
    private var fd: Int32 = -1
    private var isClosed = false
    private var directorySynced = false

    init(databasePath: String) {
        self.databasePath = databasePath
    }

    deinit { close() }

    func flush() throws {
        lock.lock()
        defer { lock.unlock() }
        if fd >= 0 {
            // The log is deleted when the last connection closes: one opened long ago may be gone.
            var info = stat()
            if fstat(fd, &info) != 0 || info.st_nlink == 0 {
                _ = Glibc.close(fd)
                fd = -1
            }
        }
        guard !isClosed else { throw POSIXError(.EBADF) }
        if fd < 0 {
            fd = Glibc.open(databasePath + "-wal", O_RDONLY | O_CLOEXEC)
            if fd >= 0, !directorySynced {
                // A new log's name must survive too (SQLite at FULL flushes the directory as well).
                directorySynced = FileSystem.syncDirectory((databasePath as NSString).deletingLastPathComponent)
            }
        }
        // No log (not WAL mode): the commit went to the database file itself.
        let target = fd >= 0 ? fd : Glibc.open(databasePath, O_RDONLY | O_CLOEXEC)
        guard target >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { if target != fd { _ = Glibc.close(target) } }
        guard fsync(target) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    func close() {
        lock.lock()
        defer { lock.unlock() }
        if fd >= 0 { _ = Glibc.close(fd) }
        fd = -1
        isClosed = true
    }
}
