import Foundation
import Testing

@testable import SwoopKit

#if canImport(Glibc)
import Glibc
#endif

@Suite("DownloadLock: one byte-range lock per download in one shared file")
struct DownloadLockTests {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "swoop-locks-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
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

    @Test func aLockIsFreeAgainWhenItsHolderGoesAway() throws {
        do {
            let held = try DownloadLock.acquire(key: "k", in: directory, what: "k")
            withExtendedLifetime(held) {}
        }
        let again = try DownloadLock.acquire(key: "k", in: directory, what: "k")
        withExtendedLifetime(again) {}
    }
}
