import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import SwoopKit

/// How a finishing group's files reach the disk: one flush of their file system only when little
/// else waits to be written, else each file's own.
@Suite("GroupFlush: one flush of the file system, or each file's own")
struct GroupFlushTests {
    static let limit = GroupFlush.othersDirtyLimit

    @Test(arguments: [
        // (files, bytes, dirty on the machine, expected)
        (0, 0, Int?.some(0), GroupFlush.eachFile),
        (1, 65536, 0, .eachFile),  // a single file: its own fsync touches nothing else
        (1, 65536, 65536, .eachFile),
        (2, 131072, nil, .eachFile),  // cannot tell what else is dirty
        (2, 131072, 0, .fileSystem),  // the group's bytes already on their way
        (2, 131072, 131072, .fileSystem),
        (2, 131072, 131072 + limit, .fileSystem),  // others' at the limit
        (2, 131072, 131072 + limit + 1, .eachFile),  // one byte more
        (64, 64 << 20, 64 << 20, .fileSystem),  // a big group's own bytes do not count against it
        (64, 1 << 20, 64 << 20, .eachFile),
    ] as [(Int, Int, Int?, GroupFlush)])
    func choice(files: Int, bytes: Int, dirty: Int?, expected: GroupFlush) {
        #expect(GroupFlush.choose(files: files, bytes: bytes, dirtyOnMachine: dirty) == expected)
    }

    /// A big file handed its bytes to the write-back as they came: at most a chunk of it may still
    /// be dirty, and only that much is taken for the group's own.
    @Test func aGroupsOwnDirtyBytesCountAtMostAChunkAFile() {
        let chunk = PartFile.writebackChunk
        #expect(GroupFlush.mayStillBeDirty(fileSizes: []) == 0)
        #expect(GroupFlush.mayStillBeDirty(fileSizes: [65536, 1024]) == 66560)
        #expect(GroupFlush.mayStillBeDirty(fileSizes: [600 << 20, 65536]) == chunk + 65536)
        #expect(GroupFlush.mayStillBeDirty(fileSizes: [chunk, chunk + 1]) == 2 * chunk)
        // A 600 MB file's group with 500 MB of another program's dirty data: each file its own flush.
        let bytes = GroupFlush.mayStillBeDirty(fileSizes: [600 << 20, 65536])
        #expect(GroupFlush.choose(files: 2, bytes: bytes, dirtyOnMachine: (500 << 20) + bytes) == .eachFile)
        #expect(GroupFlush.choose(files: 2, bytes: bytes, dirtyOnMachine: bytes) == .fileSystem)
    }

    @Test func theDescriptorLimitRisesToTheHardOne() throws {
        var limit = rlimit()
        try #require(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let raised = DescriptorLimit.raiseToHard()
        let hard = limit.rlim_max == rlim_t.max ? 1 << 20 : min(Int(clamping: limit.rlim_max), 1 << 20)
        #expect(raised == max(hard, Int(clamping: limit.rlim_cur)))
        #expect(DescriptorLimit.current == raised)
    }

    static let meminfo = """
        MemTotal:       24568232 kB
        MemFree:        10118804 kB
        Buffers:          512340 kB
        Cached:         11287564 kB
        SwapCached:            0 kB
        Active:          5391408 kB
        Dirty:              1236 kB
        Writeback:            48 kB
        AnonPages:       1873904 kB
        NFS_Unstable:          0 kB
        WritebackTmp:      99999 kB
        HugePages_Total:       0
        Hugepagesize:       2048 kB

        """

    @Test func dirtyAndWritebackOfMeminfoInBytes() {
        #expect(GroupFlush.dirtyBytes(meminfo: Array(Self.meminfo.utf8)) == (1236 + 48) * 1024)
        // No newline at the end, the two lines the other way round, other lines between.
        #expect(GroupFlush.dirtyBytes(meminfo: Array("Writeback: 0 kB\nMemFree: 1 kB\nDirty: 7 kB".utf8)) == 7 * 1024)
        #expect(GroupFlush.dirtyBytes(meminfo: Array("Dirty:\t0 kB\nWriteback:0 kB\n".utf8)) == nil, "a tab is not meminfo's padding")
        #expect(GroupFlush.dirtyBytes(meminfo: Array("Dirty: 0 kB\nWriteback: 0 kB\n".utf8)) == 0)
    }

    @Test(arguments: [
        "",
        "MemTotal: 1 kB\n",
        "Dirty: 10 kB\n",  // no Writeback
        "Writeback: 10 kB\nWritebackTmp: 5 kB\n",  // no Dirty; WritebackTmp is another line
        "Dirty: 12a kB\nWriteback: 0 kB\n",
        "Dirty: 12 MB\nWriteback: 0 kB\n",
        "Dirty: 12\nWriteback: 0 kB\n",
        "Dirty: kB\nWriteback: 0 kB\n",
        "Dirty: -3 kB\nWriteback: 0 kB\n",
        "Dirty: 99999999999999999999 kB\nWriteback: 0 kB\n",  // more than bytes can count
        "Dirty: 12 kB extra\nWriteback: 0 kB\n",
    ])
    func meminfoWithoutBothLinesAsNumbersOfKibibytesTellsNothing(text: String) {
        #expect(GroupFlush.dirtyBytes(meminfo: Array(text.utf8)) == nil)
    }

    @Test func theLargestCountsAddUpWithoutOverflow() throws {
        let largest = (Int.max >> 11 - 9) / 10 * 10 + 9
        let text = "Dirty: \(largest) kB\nWriteback: \(largest) kB\n"
        let bytes = try #require(GroupFlush.dirtyBytes(meminfo: Array(text.utf8)))
        #expect(bytes == (largest << 10) * 2)
    }

    @Test func syncfsCoversTheFilesOfLocalFileSystemsOnly() {
        // ext4, XFS, Btrfs, F2FS, tmpfs, overlayfs
        for type in [0xEF53, 0x5846_5342, 0x9123_683E, 0xF2F5_2010, 0x0102_1994, 0x794C_7630] {
            #expect(GroupFlush.coversItsFiles(fileSystemType: type))
        }
        // FUSE, NFS, SMB2, CIFS, 9p, ZFS, unknown
        for type in [0x6573_5546, 0x6969, 0xFE53_4D42, 0xFF53_4D42, 0x0102_1997, 0x2FC1_2FC1, 0] {
            #expect(!GroupFlush.coversItsFiles(fileSystemType: type))
        }
    }

    #if os(Linux)
    @Test func theFileSystemOfAnOpenFile() throws {
        let path = NSTemporaryDirectory() + "/swoop-groupflush-\(getpid())"
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        defer { close(fd); unlink(path) }
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(FileSystem.device(of: fd) == UInt64(info.st_dev))
        #expect(FileSystem.type(of: fd) != nil)
        // /dev/shm is a tmpfs.
        let shm = "/dev/shm/swoop-groupflush-\(getpid())"
        let shmFD = open(shm, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        try #require(shmFD >= 0)
        defer { close(shmFD); unlink(shm) }
        #expect(FileSystem.type(of: shmFD) == 0x0102_1994)
        #expect(FileSystem.syncFileSystem(holding: fd) == nil)
        #expect(FileSystem.device(of: -1) == nil && FileSystem.type(of: -1) == nil)
        #expect(FileSystem.syncFileSystem(holding: -1) == EBADF)
    }

    @Test func thisMachineTellsWhatIsDirty() {
        #expect(FileSystem.dirtyBytesOnMachine() != nil)
    }
    #endif
}

/// Batches of disk work: what arrives while a batch is handled forms the next, in order, each item
/// once, none bigger than the most allowed.
@Suite("DiskBatches: what arrives meanwhile is the next batch", .timeLimit(.minutes(1)))
struct DiskBatchesTests {
    @Test func itemsAddedWhileABatchIsHandledFormTheNextBoundedBatches() async throws {
        let batches = NIOLockedValueBox<[[Int]]>([])
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let total = 12
        let work = DiskBatches<Int>(maxBatch: 5) { batch in
            let isFirst = batches.withLockedValue { $0.append(batch); return $0.count == 1 }
            if isFirst { release.wait() }
            if batches.withLockedValue({ $0.joined().count }) == total { done.signal() }
        }
        work.add(0)
        // The first batch is being handled (held): the rest wait, then come in batches of at most 5.
        let deadline = ContinuousClock.now + .seconds(10)
        while batches.withLockedValue({ $0.count }) < 1, ContinuousClock.now < deadline { usleep(1_000) }
        for item in 1..<total { work.add(item) }
        #expect(work.waitingCount == total - 1)
        release.signal()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(batches.withLockedValue { $0 } == [[0], [1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11]])
        #expect(work.waitingCount == 0)
        // Idle again: the next item is a batch of its own, handled at once.
        work.add(99)
        while batches.withLockedValue({ $0.count }) < 5, ContinuousClock.now < deadline { usleep(1_000) }
        #expect(batches.withLockedValue { $0.last } == [99])
    }
}
