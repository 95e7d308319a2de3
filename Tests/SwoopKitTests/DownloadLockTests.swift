import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

#if canImport(Glibc)
import Glibc
#endif

@Suite("Locks: one byte-range lock per download in one shared file; the part file's flock")
struct DownloadLockTests {
    let directory: String

    init() throws {
        directory = try makeTemporaryDirectory("swoop-locks")
    }

    @Test func aHeldKeyIsRefusedWithTheHoldersPidOthersAreFreeAndNoFileIsMadePerKey() throws {
        let held = try DownloadLock.acquire(key: "a", in: directory, what: "http://h/a")
        let error = #expect(throws: SwoopError.self) { try DownloadLock.acquire(key: "a", in: directory, what: "http://h/a") }
        #expect(error?.code == .inUse)
        #expect(error?.message == "http://h/a is already being downloaded by this swoop process (pid \(getpid()))")
        var others: [DownloadLock] = []
        for i in 0..<500 {
            others.append(try DownloadLock.acquire(key: "other \(i)", in: directory, what: "x"))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["downloads.lock"])
        withExtendedLifetime(held) {}
        withExtendedLifetime(others) {}
    }

    /// The locks held in one lock file share one descriptor, closed when the last is let go.
    @Test func locksShareOneDescriptorClosedWithTheLast() throws {
        let first = try DownloadLock.acquire(key: "one", in: directory, what: "x")
        let second = try DownloadLock.acquire(key: "two", in: directory, what: "x")
        let fd = try #require(first.descriptor)
        #expect(second.descriptor == fd)
        #expect(fcntl(fd, F_GETFD) >= 0)
        first.release()
        #expect(second.descriptor == fd)
        // Let go, a lock is free for this process again at once.
        let again = try DownloadLock.acquire(key: "one", in: directory, what: "x")
        again.release()
        second.release()
        #expect(LockFiles.shared.openCount(at: directory + "/downloads.lock") == 0)
        #expect(second.descriptor == nil)
    }

    /// `downloads.lock` removed while this process holds a lock in it, and made again by another
    /// process that locks a download there: this process must find that lock, not take the download
    /// again in the removed file it still has open. (Another open file description stands in for
    /// the other process: its byte-range locks conflict with ours as another process's do.)
    @Test func aLockFileMadeAgainIsTheOneLockedNotTheRemovedOneStillOpen() throws {
        let path = directory + "/downloads.lock"
        let kept = try DownloadLock.acquire(key: "kept", in: directory, what: "kept")
        let old = try #require(kept.descriptor)
        #expect(unlink(path) == 0)
        let other = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        #expect(other >= 0)
        defer { close(other) }
        var byte = flock()
        byte.l_type = Int16(F_WRLCK)
        byte.l_whence = Int16(SEEK_SET)
        byte.l_start = DownloadLock.lockedByte(of: "taken")
        byte.l_len = 1
        #expect(fcntl(other, DownloadLock.ofdSetLock, &byte) == 0)

        let error = #expect(throws: SwoopError.self) { try DownloadLock.acquire(key: "taken", in: directory, what: "taken") }
        #expect(error?.code == .inUse)
        #expect(LockFiles.shared.openCount(at: path) == 1)
        // A new lock goes into the file now at the path, beside the removed one still held.
        let fresh = try DownloadLock.acquire(key: "fresh", in: directory, what: "fresh")
        #expect(try #require(fresh.descriptor) != old)
        #expect(LockFiles.shared.openCount(at: path) == 2)
        fresh.release()
        #expect(LockFiles.shared.openCount(at: path) == 1)
        #expect(kept.descriptor == old)
        kept.release()
        #expect(LockFiles.shared.openCount(at: path) == 0)
    }

    @Test func aLockIsFreeAgainWhenItsHolderGoesAway() throws {
        do {
            let held = try DownloadLock.acquire(key: "k", in: directory, what: "k")
            withExtendedLifetime(held) {}
        }
        let again = try DownloadLock.acquire(key: "k", in: directory, what: "k")
        withExtendedLifetime(again) {}
    }

    /// A child process started while the lock was held shares its open file until it execs (or
    /// for good, had it inherited the descriptor): a release must still free the lock at once for
    /// this process's next run of the download. Seen as a resumed download failing "already being
    /// downloaded by this swoop process" while tests started processes beside it.
    @Test func aReleasedLockIsFreeEvenWhileAnotherDescriptorSharesItsFile() throws {
        let held = try DownloadLock.acquire(key: "shared", in: directory, what: "k")
        let copy = dup(try #require(held.descriptor))
        #expect(copy >= 0)
        defer { close(copy) }
        held.release()
        let again = try DownloadLock.acquire(key: "shared", in: directory, what: "k")
        withExtendedLifetime(again) {}
    }

    /// The same for a part file's lock: unlocked, it is free to open again while another
    /// descriptor still shares the file.
    @Test func anUnlockedPartFileIsFreeEvenWhileAnotherDescriptorSharesIt() throws {
        let path = directory + "/f.bin.swoop"
        let first = try #require(try PartFile.open(path, exclusive: false))
        let copy = dup(first.fd)
        #expect(copy >= 0)
        defer { close(copy) }
        #expect(throws: SwoopError.self) { try PartFile.open(path, exclusive: false) }
        first.unlock()
        let again = try #require(try PartFile.open(path, exclusive: false))
        withExtendedLifetime((first, again)) {}
    }
}
