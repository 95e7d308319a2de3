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
/// The file is `flock`ed while its transfer runs, so two processes never write one download.
final class PartFile: Sendable {
    let path: String
    /// The open file (internal for tests).
    let fd: Int32
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
        unlock()
        _ = Glibc.close(fd)
    }

    /// Lets the file's lock go now. Closing alone would not while the open file is shared: by a
    /// flush still finishing, or by a child process started meanwhile (between its fork and its
    /// exec); this process's next run of the download must find the file free at once.
    func unlock() {
        _ = flock(fd, LOCK_UN)
    }

    /// Opens (or creates) a part file and locks it.
    ///
    /// - Parameter exclusive: Fail with `EEXIST` (returned as `nil`) when the file already exists.
    /// - Returns: The open file, or `nil` when `exclusive` and the file exists.
    /// - Throws: ``SwoopError/Code/inUse`` when another process holds it; a file-system error otherwise.
    static func open(_ path: String, exclusive: Bool) throws -> PartFile? {
        let flags = O_RDWR | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : 0)
        // A few times: a holder that removes the file and then lets it go can leave the lock taken
        // here on a file no longer at `path` (opened before the removal, locked after).
        for _ in 0..<3 {
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
            if exclusive || isStill(fd, at: path) { return PartFile(path: path, fd: fd) }
            _ = flock(fd, LOCK_UN)
            _ = Glibc.close(fd)
        }
        throw SwoopError(.inUse, "\(path) is being removed and made again by another download")
    }

    /// Whether the open file `fd` is still the one at `path`.
    private static func isStill(_ fd: Int32, at path: String) -> Bool {
        var opened = stat()
        var named = stat()
        guard fstat(fd, &opened) == 0, stat(path, &named) == 0 else { return false }
        return opened.st_dev == named.st_dev && opened.st_ino == named.st_ino
    }

    /// The extended attribute that names the download a part file was made for, while that
    /// download's claim of the file is not in the store yet (see `Transfer.claimFile`).
    static let claimAttribute = "user.swoop.download"

    private static let setAttribute = CFunctions.lookUp(
        "fsetxattr", as: (@convention(c) (Int32, UnsafePointer<CChar>, UnsafeRawPointer, Int, Int32) -> Int32).self
    )
    private static let getAttribute = CFunctions.lookUp(
        "fgetxattr", as: (@convention(c) (Int32, UnsafePointer<CChar>, UnsafeMutableRawPointer, Int) -> Int).self
    )
    private static let removeAttribute = CFunctions.lookUp(
        "fremovexattr", as: (@convention(c) (Int32, UnsafePointer<CChar>) -> Int32).self
    )
    private static let removePathAttribute = CFunctions.lookUp(
        "removexattr", as: (@convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>) -> Int32).self
    )

    /// Names `download` in the file (``claimAttribute``). Returns `false` where the file system
    /// keeps no user attributes: the caller then claims the file in the store at once.
    func tag(_ download: String) -> Bool {
        guard let set = Self.setAttribute else { return false }
        var value = Array(download.utf8)
        return set(fd, Self.claimAttribute, &value, value.count, 0) == 0
    }

    /// Takes the tag (``tag(_:)``) off again: the final file carries nothing of Swoop's.
    func untag() {
        _ = Self.removeAttribute?(fd, Self.claimAttribute)
    }

    /// Takes the tag off a part file its download now owns. Off a file `emptied` of another
    /// download's bytes only once that cut is on disk: until then the tag is what says none of the
    /// bytes is this download's, and a crash between the two must not leave them untagged beside a
    /// record that vouches for them.
    func clearTag(emptied: Bool) throws {
        guard taggedDownload != nil else { return }
        if emptied { try flush() }
        untag()
    }

    /// ``untag()`` of the file at `path`, not open here.
    static func untag(path: String) {
        _ = removePathAttribute?(path, claimAttribute)
    }

    /// The download the file names (``tag(_:)``), if any.
    var taggedDownload: String? {
        Self.taggedDownload(fd)
    }

    /// The download the file at `path` names (``tag(_:)``), if any; nil for a file that cannot be opened.
    static func taggedDownload(path: String) -> String? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { _ = Glibc.close(fd) }
        return taggedDownload(fd)
    }

    private static func taggedDownload(_ fd: Int32) -> String? {
        guard let get = getAttribute else { return nil }
        var value = [UInt8](repeating: 0, count: 128)
        let count = get(fd, claimAttribute, &value, value.count)
        return count > 0 ? String(decoding: value.prefix(count), as: UTF8.self) : nil
    }

    /// Deletes the part file at `path` of `download` (a cancel, a removal), unless a live process
    /// holds it (locked) or it is tagged for another download: then the name is another's now, a
    /// small file whose claim waits (see `Transfer.claimFile`), made while `download`'s own file was gone.
    ///
    /// - Parameter tagged: Only a file tagged for `download` (one whose record never named it).
    static func remove(_ path: String, of download: String, tagged: Bool = false) {
        let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { _ = Glibc.close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return }
        defer { _ = flock(fd, LOCK_UN) }
        let tag = taggedDownload(fd)
        guard tag.map({ $0 == download }) ?? !tagged else { return }
        unlink(path)
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
        let failure = buffer.withUnsafeReadableBytes { WriteAll.write(fd, $0, at: offset) }
        if let failure { throw SwoopError.fileSystem("write to", path: path, errno: failure) }
    }

    /// Flushes the whole file's data to disk now, whatever was flushed before (segmented downloads,
    /// which track what a flush covers themselves).
    func flush() throws {
        try waitForBackgroundFlush()
        if let failure = Self.flush(fd, path: path, metadata: false) { throw SwoopError.fileSystem("flush", path: path, errno: failure) }
    }

    /// Waits for a background flush still running, and throws the failure of one that failed.
    private func waitForBackgroundFlush() throws {
        syncQueue.sync {}
        if let failure = syncFailure { throw SwoopError.fileSystem("flush", path: path, errno: failure) }
    }

    /// Flushes the file: its data (`fdatasync`), with `metadata` its modification time too
    /// (`fsync`). Returns the `errno` of a failure (or one a test armed: ``FlushFaults``).
    private static func flush(_ fd: Int32, path: String, metadata: Bool) -> Int32? {
        if let injected = FlushFaults.failure(path: path, metadata: metadata) { return injected }
        return (metadata ? fsync(fd) : fdatasync(fd)) == 0 ? nil : errno
    }

    /// Waits for the file's writeback and returns the `errno` of its write errors since it was
    /// opened (`sync_file_range` with both waits reports them as `fsync` does), or one a test armed
    /// (``FlushFaults``, as for the finish's flush); without `sync_file_range`, flushes it.
    private static func confirmWritten(_ fd: Int32, path: String) -> Int32? {
        if let injected = FlushFaults.failure(path: path, metadata: true) { return injected }
        guard let syncFileRange else { return flush(fd, path: path, metadata: true) }
        let waitWriteWait: UInt32 = 1 | 2 | 4  // SYNC_FILE_RANGE_WAIT_BEFORE | WRITE | WAIT_AFTER
        return syncFileRange(fd, 0, 0, waitWriteWait) == 0 ? nil : errno
    }

    /// Asks the kernel to start writing `length` bytes at `offset` to disk now, without waiting
    /// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`): the final `fdatasync` then finds little left to do.
    /// Best effort: an error here changes nothing (the flushes that count still report theirs).
    func startWriteback(offset: Int, length: Int) {
        guard length > 0, let syncFileRange = Self.syncFileRange else { return }
        _ = syncFileRange(fd, off_t(offset), off_t(length), 2 /* SYNC_FILE_RANGE_WRITE */)
    }

    /// Written bytes are handed to the disk's writeback in chunks of this size as they come (see
    /// ``startWriteback(offset:length:)``), so the flush before the rename has little left to write.
    static let writebackChunk = 8 << 20

    /// glibc's `sync_file_range`, which the Glibc module does not export (it needs `_GNU_SOURCE`).
    private static let syncFileRange = CFunctions.lookUp(
        "sync_file_range", as: (@convention(c) (Int32, off_t, off_t, UInt32) -> Int32).self
    )

    /// Flushes the file's data to disk now and records `offset` as synced.
    ///
    /// - Parameter metadata: Flush the modification time too (`fsync`, not `fdatasync`): for the
    ///   last flush before a download is recorded complete with the file's size and mtime.
    func syncNow(upTo offset: Int, metadata: Bool = false) throws {
        try waitForBackgroundFlush()
        // Nothing past the last flush (a part file just created, or saved again): no disk round trip.
        if !metadata, offset <= syncedBytes { return }
        if let failure = Self.flush(fd, path: path, metadata: metadata) { throw SwoopError.fileSystem("flush", path: path, errno: failure) }
        sync.withLockedValue { $0.synced = max($0.synced, offset) }
    }

    /// Confirms that the file's bytes reached the disk through a flush of its whole file system
    /// (``FileSystem/syncFileSystem(holding:)``) made after they were written, and records `offset`
    /// as synced: waits for any writeback of the file still running and reports the file's own
    /// write errors since it was opened (`sync_file_range` with both waits reports them as `fsync`
    /// does), without a journal commit or cache flush of its own.
    func confirmFlushed(upTo offset: Int) throws {
        try waitForBackgroundFlush()
        if let failure = Self.confirmWritten(fd, path: path) { throw SwoopError.fileSystem("flush", path: path, errno: failure) }
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
        syncQueue.async { [fd, path, sync] in
            let failed = Self.flush(fd, path: path, metadata: false)
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
