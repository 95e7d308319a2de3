import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A cross-process lock on one download: an open-file-description byte-range lock (`F_OFD_SETLK`)
/// on one byte of one shared file, `downloads.lock` in the lock directory. The byte's offset comes
/// from the download's key (sha-256, 61 bits), so downloads never share a byte in practice, and no file
/// is created per download (thousands of small downloads would otherwise each pay an inode). The
/// kernel drops the lock when the process dies, however it dies.
///
/// The holder also writes its pid at a small slot derived from the same hash, so a refused process
/// can name it; two downloads sharing a slot (1 in 65,536) can only make that pid wrong, never the lock.
final class DownloadLock: Sendable {
    /// The lock file and the byte locked in it, or `nil` for a lock that locks nothing (no lock
    /// directory: an ephemeral manager) or that was released.
    private let held: NIOLockedValueBox<(path: String, byte: off_t)?>

    private init(path: String?, byte: off_t = 0) { self.held = NIOLockedValueBox(path.map { ($0, byte) }) }

    deinit { release() }

    /// The locked file's descriptor while held (for tests).
    var descriptor: Int32? {
        held.withLockedValue { held in held.flatMap { LockFiles.shared.descriptor(of: $0.path, holding: $0.byte) } }
    }

    /// Lets the lock go now, rather than when the last reference goes. Later calls do nothing.
    ///
    /// The byte is unlocked explicitly, not by closing the file: closing alone would leave it locked
    /// while a child process started meanwhile still shares the open file (between its fork and its
    /// exec), and this process's next run of the download would find it taken.
    func release() {
        held.withLockedValue { held in
            guard let (path, byte) = held else { return }
            LockFiles.shared.unlock(byte, in: path)
            held = nil
        }
    }

    /// Takes the lock of one download: the one place a download's lock is keyed (its URL,
    /// directory and requested name).
    ///
    /// - Parameter directory: The lock directory; `nil` locks nothing (a manager that writes no state).
    /// - Throws: ``SwoopError/Code/inUse`` naming the holder's pid when another process holds it.
    static func acquire(_ key: DownloadKey, in directory: String?) throws -> DownloadLock {
        guard let directory else { return DownloadLock(path: nil) }
        return try acquire(key: lockName(key), in: directory, what: key.url)
    }

    /// Takes the lock of one download, or returns `nil` when another process holds it.
    static func acquireIfFree(_ key: DownloadKey, in directory: String?) throws -> DownloadLock? {
        do {
            return try acquire(key, in: directory)
        } catch let error as SwoopError where error.code == .inUse {
            return nil
        }
    }

    /// This process's id, written into the slot table (looked up once: `getpid` is a system call).
    static let pid = getpid()

    /// The shared lock file in a lock directory.
    static func fileName() -> String { "downloads.lock" }

    /// Takes the lock of `key` in `directory`, or throws ``SwoopError/Code/inUse`` naming the holder's pid.
    static func acquire(key: String, in directory: String, what: String) throws -> DownloadLock {
        let path = PathNames.join(directory, fileName())
        let (lock, pidSlot) = Self.place(of: key)
        var attempts = 0
        while true {
            let holder: UInt64
            switch try LockFiles.shared.lock(lock, pidSlot: pidSlot, in: path) {
            case .taken:
                return DownloadLock(path: path, byte: lock.l_start)
            case .heldHere:
                holder = UInt64(Self.pid)
            case .heldElsewhere(let pid):
                holder = pid
            }
            // Held by this very process: another run of the same download that is letting go.
            // Look again for up to about 50 ms before calling it taken.
            if holder == UInt64(Self.pid), attempts < 10 {
                attempts += 1
                usleep(5_000)
                continue
            }
            let named = holder > 0 ? String(holder) : "?"
            let who = holder == UInt64(Self.pid) ? "this swoop process" : "another swoop process"
            throw SwoopError(.inUse, "\(what) is already being downloaded by \(who) (pid \(named))")
        }
    }

    /// The name a download's lock is placed by: taking it and looking at it must agree.
    static func lockName(_ key: DownloadKey) -> String {
        "\(key.url)\n\(key.directory)\n\(key.requestedName)"
    }

    /// Whether a process holds the lock of `key` (it is transferring that download), without taking
    /// it: a reader such as `swoop ls` must not make a starting transfer fail for a moment.
    static func isHeld(_ key: DownloadKey, in directory: String) -> Bool {
        let path = PathNames.join(directory, fileName())
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { _ = Glibc.close(fd) }
        var (lock, _) = place(of: lockName(key))
        guard fcntl(fd, ofdGetLock, &lock) == 0 else { return false }
        return lock.l_type != Int16(F_UNLCK)
    }

    /// The byte locked for `key` (for tests).
    static func lockedByte(of key: String) -> off_t { place(of: key).lock.l_start }

    /// The byte locked for `key` and its pid slot. High offsets for the locks, a low table for the
    /// pids: the two never overlap.
    private static func place(of key: String) -> (lock: flock, pidSlot: off_t) {
        let hash = Hashing.sha256(key).prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = off_t(1 << 40) + off_t(hash >> 3)
        lock.l_len = 1
        return (lock, off_t(hash % 65_536) * 8)
    }

    /// `F_OFD_GETLK` and `F_OFD_SETLK` (Linux 3.15+), which the Glibc module does not export.
    static let ofdGetLock: Int32 = 36
    static let ofdSetLock: Int32 = 37
}
