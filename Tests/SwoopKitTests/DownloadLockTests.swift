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
        #expect(LockFiles.shared.descriptor(of: directory + "/downloads.lock") == nil)
        #expect(second.descriptor == nil)
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
