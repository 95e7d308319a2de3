import Dispatch
import Foundation
import NIOConcurrencyHelpers
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The file a download writes into before it gets its final name. Bytes go in with `pwrite` at
/// explicit offsets; `fdatasync` runs off the hot path and reports how far the disk is known to hold.
/// The file is `flock`ed for as long as it is open, so two processes never write one download.
final class PartFile: Sendable {
    let path: String
    private let fd: Int32
    private let syncQueue = DispatchQueue(label: "swoop.partfile.sync")
    private let sync = NIOLockedValueBox(SyncState())

    private struct SyncState {
        var synced = 0
        var inFlight = false
        var error: Int32?
    }

    private init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    deinit {
        syncQueue.sync {}
        _ = Glibc.close(fd)
    }

    /// Opens (or creates) a part file and locks it.
    ///
    /// - Parameter exclusive: Fail with `EEXIST` (returned as `nil`) when the file already exists.
    /// - Returns: The open file, or `nil` when `exclusive` and the file exists.
    /// - Throws: ``SwoopError/Code/inUse`` when another process holds it; a file-system error otherwise.
    static func open(_ path: String, exclusive: Bool) throws -> PartFile? {
        let flags = O_RDWR | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : 0)
        let fd = Glibc.open(path, flags, 0o644)
        if fd < 0 {
            if exclusive && errno == EEXIST { return nil }
            throw SwoopError.fileSystem("create", path: path, errno: errno)
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            _ = Glibc.close(fd)
            if code == EWOULDBLOCK {
                throw SwoopError(.inUse, "\(path) is being downloaded by another swoop process")
            }
            throw SwoopError.fileSystem("lock", path: path, errno: code)
        }
        return PartFile(path: path, fd: fd)
    }

    /// The file's current size.
    func size() throws -> Int {
        try sizeAndModified().size
    }

    /// The file's size and modification time (seconds since 1970), as `FileSystem.sizeAndModified`
    /// reports them for a path.
    func sizeAndModified() throws -> (size: Int, modified: Double) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw SwoopError.fileSystem("stat", path: path, errno: errno) }
        return (Int(info.st_size), Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9)
    }

    /// Cuts the file to `length` bytes and forgets any sync beyond it.
    func truncate(to length: Int) throws {
        // A flush still running would otherwise report the old length as synced after the cut.
        syncQueue.sync {}
        guard ftruncate(fd, off_t(length)) == 0 else {
            throw SwoopError.fileSystem("truncate", path: path, errno: errno)
        }
        sync.withLockedValue { $0.synced = min($0.synced, length) }
    }

    /// Writes all readable bytes of `buffer` at `offset`.
    func write(_ buffer: ByteBuffer, at offset: Int) throws {
        try buffer.withUnsafeReadableBytes { bytes in
            var done = 0
            while done < bytes.count {
                let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw SwoopError.fileSystem("write to", path: path, errno: errno)
                }
                done += n
            }
        }
    }

    /// Flushes the whole file's data to disk now, whatever was flushed before (segmented downloads,
    /// which track what a flush covers themselves).
    func flush() throws {
        syncQueue.sync {}
        if let failure = syncFailure { throw SwoopError.fileSystem("flush", path: path, errno: failure) }
        guard fdatasync(fd) == 0 else { throw SwoopError.fileSystem("flush", path: path, errno: errno) }
    }

    /// Asks the kernel to start writing `length` bytes at `offset` to disk now, without waiting
    /// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`): the final `fdatasync` then finds little left to do.
    /// Best effort: an error here changes nothing (the flushes that count still report theirs).
    func startWriteback(offset: Int, length: Int) {
        guard length > 0, let syncFileRange = Self.syncFileRange else { return }
        _ = syncFileRange(fd, off_t(offset), off_t(length), 2 /* SYNC_FILE_RANGE_WRITE */)
    }

    /// glibc's `sync_file_range`, which the Glibc module does not export (it needs `_GNU_SOURCE`).
    private static let syncFileRange: (@convention(c) (Int32, off_t, off_t, UInt32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sync_file_range") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, off_t, off_t, UInt32) -> Int32).self)
    }()

    /// Flushes the file's data to disk now and records `offset` as synced.
    ///
    /// - Parameter metadata: Flush the modification time too (`fsync`, not `fdatasync`): for the
    ///   last flush before a download is recorded complete with the file's size and mtime.
    func syncNow(upTo offset: Int, metadata: Bool = false) throws {
        syncQueue.sync {}
        if let failure = syncFailure { throw SwoopError.fileSystem("flush", path: path, errno: failure) }
        if metadata {
            guard fsync(fd) == 0 else { throw SwoopError.fileSystem("flush", path: path, errno: errno) }
        } else {
            // Nothing past the last flush (a part file just created, or saved again): no disk round trip.
            if offset <= syncedBytes { return }
            guard fdatasync(fd) == 0 else { throw SwoopError.fileSystem("flush", path: path, errno: errno) }
        }
        sync.withLockedValue { $0.synced = max($0.synced, offset) }
    }

    /// Starts an `fdatasync` on a background queue unless one is running; when it finishes,
    /// ``syncedBytes`` becomes `offset`. The caller keeps writing meanwhile.
    func syncInBackground(upTo offset: Int) {
        let sync = self.sync
        syncInBackground { sync.withLockedValue { $0.synced = max($0.synced, offset) } }
    }

    /// Starts an `fdatasync` on a background queue unless one is running, and calls `then` when it
    /// succeeds (for callers that track what a flush covers themselves, like segmented downloads).
    /// Returns whether a flush was started.
    @discardableResult
    func syncInBackground(then: @escaping @Sendable () -> Void) -> Bool {
        let start = sync.withLockedValue { state -> Bool in
            guard !state.inFlight else { return false }
            state.inFlight = true
            return true
        }
        guard start else { return false }
        syncQueue.async { [fd, sync] in
            let failed = fdatasync(fd) != 0 ? errno : nil
            sync.withLockedValue { state in
                state.inFlight = false
                if let failed { state.error = failed }
            }
            if failed == nil { then() }
        }
        return true
    }

    /// The `errno` of a background flush that failed, if one did.
    var syncFailure: Int32? { sync.withLockedValue { $0.error } }

    /// Bytes from the start known to be on disk.
    var syncedBytes: Int { sync.withLockedValue { $0.synced } }

    /// Sets what is known to be on disk (from the store, when the part file is reopened in the
    /// same boot this is unknown, so callers pass what the store trusted).
    func assumeSynced(_ offset: Int) { sync.withLockedValue { $0.synced = offset } }
}

/// A cross-process lock on one download: an open-file-description byte-range lock (`F_OFD_SETLK`)
/// on one byte of one shared file, `downloads.lock` in the lock directory. The byte's offset comes
/// from the download's key (sha-256, 61 bits), so downloads never share a byte in practice, and no file
/// is created per download (thousands of small downloads would otherwise each pay an inode). The
/// kernel drops the lock when the process dies, however it dies.
///
/// The holder also writes its pid at a small slot derived from the same hash, so a refused process
/// can name it; two downloads sharing a slot (1 in 65,536) can only make that pid wrong, never the lock.
final class ProcessLock: Sendable {
    private let fd: Int32

    private init(fd: Int32) { self.fd = fd }

    deinit { _ = Glibc.close(fd) }

    /// This process's id, written into the slot table (looked up once: `getpid` is a system call).
    private static let pid = getpid()

    /// The shared lock file in a lock directory.
    static func fileName() -> String { "downloads.lock" }

    /// Takes the lock of `key` in `directory`, or throws ``SwoopError/Code/inUse`` naming the holder's pid.
    static func acquire(key: String, in directory: String, what: String) throws -> ProcessLock {
        let path = (directory as NSString).appendingPathComponent(fileName())
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SwoopError.fileSystem("open lock file", path: path, errno: errno) }
        let hash = Hashing.sha256(key).prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        // High offsets for the locks, a low table for the pids: the two never overlap.
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = off_t(1 << 40) + off_t(hash >> 3)
        lock.l_len = 1
        let pidSlot = off_t(hash % 65_536) * 8
        guard fcntl(fd, Self.ofdSetLock, &lock) == 0 else {
            let code = errno
            var bytes = [UInt8](repeating: 0, count: 8)
            let n = pread(fd, &bytes, 8, pidSlot)
            _ = Glibc.close(fd)
            guard code == EAGAIN || code == EACCES else { throw SwoopError.fileSystem("lock", path: path, errno: code) }
            let pid = n == 8 ? bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } : 0
            throw SwoopError(.inUse, "\(what) is already being downloaded by another swoop process (pid \(pid > 0 ? String(pid) : "?"))")
        }
        let pid = UInt64(Self.pid)
        let bytes = (0..<8).map { UInt8(truncatingIfNeeded: pid >> (56 - 8 * UInt64($0))) }
        _ = pwrite(fd, bytes, 8, pidSlot)
        return ProcessLock(fd: fd)
    }

    /// `F_OFD_SETLK` (Linux 3.15+), which the Glibc module does not export.
    private static let ofdSetLock: Int32 = 37
}

package enum FileSystem {
    /// The kernel's boot id; a change means the machine restarted and unsynced bytes are suspect.
    static let bootID: String = {
        let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
        return text?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "unknown"
    }()

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Whether both paths name the same file (hard links of one inode).
    static func isSameFile(_ a: String, _ b: String) -> Bool {
        var first = stat()
        var second = stat()
        guard lstat(a, &first) == 0, lstat(b, &second) == 0 else { return false }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    /// Size and modification time, or `nil` when the file is missing.
    static func sizeAndModified(_ path: String) -> (size: Int, modified: Double)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        return (Int(info.st_size), modified)
    }

    /// Checks that `path` is a writable directory, naming it in the error.
    static func checkWritableDirectory(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw SwoopError.fileSystem("use directory", path: path, errno: errno)
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw SwoopError(.fileSystem, "cannot use directory \(path): not a directory")
        }
        guard access(path, W_OK | X_OK) == 0 else {
            throw SwoopError.fileSystem("write to directory", path: path, errno: errno)
        }
    }

    /// Gives `part` the name `final`. Without `replace`, fails if `final` appeared meanwhile.
    static func publish(_ part: String, as final: String, replace: Bool) throws {
        if replace {
            guard rename(part, final) == 0 else { throw SwoopError.fileSystem("rename \(part) to", path: final, errno: errno) }
        } else if link(part, final) == 0 {
            _ = unlink(part)
        } else if errno == EEXIST {
            throw SwoopError(.destinationExists, "cannot rename \(part): \(final) appeared meanwhile; the download is kept in \(part)")
        } else {
            // File systems without hard links: the check and the rename are not atomic there.
            guard !exists(final) else {
                throw SwoopError(.destinationExists, "cannot rename \(part): \(final) already exists")
            }
            guard rename(part, final) == 0 else { throw SwoopError.fileSystem("rename \(part) to", path: final, errno: errno) }
        }
        let directory = (final as NSString).deletingLastPathComponent
        unsyncedDirectories.withLockedValue { _ = $0.insert(directory) }
    }

    /// Directories with renames not yet flushed (``syncDirectories()``).
    private static let unsyncedDirectories = NIOLockedValueBox(Set<String>())

    /// Flushes the directories files were published into since the last call, so that the renames
    /// survive a power loss (the records already do, and a lost rename is redone by the next run).
    /// The manager calls it when it shuts down: one `fsync` per directory, not one per file.
    static func syncDirectories() {
        let directories = unsyncedDirectories.withLockedValue { pending in
            defer { pending.removeAll() }
            return pending
        }
        for directory in directories.sorted() { syncDirectory(directory) }
    }

    /// Makes the names created or renamed in the directory `path` durable. Returns whether the
    /// `fsync` succeeded.
    @discardableResult
    package static func syncDirectory(_ path: String) -> Bool {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { _ = Glibc.close(fd) }
        return fsync(fd) == 0
    }
}
