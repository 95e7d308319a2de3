/// How the files of a finishing group reach the disk (pure: ``FinishGroups`` asks, then flushes).
///
/// - ``eachFile``: each file's own `fsync`. On a journaled disk every `fsync` that comes after the
///   journal commit covering its file still sends the disk a cache flush of its own: a group of 24
///   files cost 24 flushes.
/// - ``fileSystem``: one `syncfs` of the file system the files are on writes them all, commits the
///   journal once and flushes the disk's cache once; each file then confirms that its own pages
///   were written without error (``PartFile/confirmFlushed(upTo:)``). 2,000 × 64 KiB onto a fresh
///   ext4 took 0.85 and 0.87 × the wall time of each file's `fsync` (same-run medians of 7, two
///   runs; with eight times `-j` finishing at once).
///
/// A `syncfs` covers the files only where the file system flushes what its files hold, as their
/// `fsync` would: the local ones named in ``coversItsFiles(fileSystemType:)``. A FUSE file system
/// whose server does not implement it, or a network one, returns from `syncfs` with the files
/// still only in its server's memory, where each file's `fsync` asks the server to flush it.
///
/// A `syncfs` also writes every other dirty page of that file system, another program's big copy
/// too, and would wait for it: it is chosen only when little else is dirty on the machine
/// (`Dirty` and `Writeback` of `/proc/meminfo`, less the group's own bytes, at most
/// ``othersDirtyLimit``). A single file is flushed alone: its `fsync` is as cheap and touches
/// nothing else.
enum GroupFlush: Equatable, Sendable {
    case eachFile
    case fileSystem

    /// The most bytes waiting to be written for others that a group's `syncfs` may wait for: a
    /// tenth of a second of a slow disk.
    static let othersDirtyLimit = 16 << 20

    /// - Parameters:
    ///   - files: How many files the group flushes.
    ///   - bytes: Their bytes that may still be waiting to be written (``mayStillBeDirty(fileSizes:)``).
    ///   - dirtyOnMachine: What the machine has waiting to be written and being written, in bytes
    ///     (``dirtyBytes(meminfo:)``); `nil` when it cannot be known.
    static func choose(files: Int, bytes: Int, dirtyOnMachine: Int?) -> GroupFlush {
        guard files > 1, let dirty = dirtyOnMachine else { return .eachFile }
        return dirty - bytes <= othersDirtyLimit ? .fileSystem : .eachFile
    }

    /// How much of files of these sizes may still wait to be written when they finish: a download
    /// hands its bytes to the disk's write-back every ``PartFile/writebackChunk`` as they come, so
    /// at most that much of each. (Counting a big file's whole size as its own let a `syncfs` wait
    /// for as much of another program's dirty data: 500 MB behind a 600 MB download's group.)
    static func mayStillBeDirty(fileSizes: [Int]) -> Int {
        fileSizes.reduce(0) { $0 + min(max(0, $1), PartFile.writebackChunk) }
    }

    /// Whether a `syncfs` of a file system of this type (`statfs`'s `f_type`) makes its files'
    /// data and metadata durable as each file's `fsync` would: ext2/3/4, XFS, Btrfs, F2FS (their
    /// `sync_fs` commits the journal or transaction and flushes the disk's cache after waiting for
    /// the data), tmpfs (nothing to flush), and overlayfs (it flushes its upper file system).
    static func coversItsFiles(fileSystemType: Int) -> Bool {
        coveringTypes.contains(fileSystemType)
    }

    private static let coveringTypes: Set<Int> = [0xEF53, 0x5846_5342, 0x9123_683E, 0xF2F5_2010, 0x0102_1994, 0x794C_7630]

    /// The bytes `/proc/meminfo` counts as waiting to be written (`Dirty`) and being written
    /// (`Writeback`), or `nil` when either line is missing or not a number of kB. Read as bytes: a
    /// group reads it each time.
    static func dirtyBytes<Bytes: Collection<UInt8>>(meminfo: Bytes) -> Int? {
        var dirty: Int?
        var writeback: Int?
        var start = meminfo.startIndex
        while start < meminfo.endIndex, dirty == nil || writeback == nil {
            let end = meminfo[start...].firstIndex(of: UInt8(ascii: "\n")) ?? meminfo.endIndex
            let line = meminfo[start..<end]
            start = end == meminfo.endIndex ? end : meminfo.index(after: end)
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = line[..<colon]
            let isDirty = name.elementsEqual("Dirty".utf8)
            guard isDirty || name.elementsEqual("Writeback".utf8) else { continue }
            guard let kibibytes = kibibytes(line[line.index(after: colon)...]) else { return nil }
            if isDirty { dirty = kibibytes << 10 } else { writeback = kibibytes << 10 }
        }
        guard let dirty, let writeback else { return nil }
        return dirty + writeback
    }

    /// `   1234 kB` as 1234; `nil` for anything else (or a number too big to count in bytes).
    private static func kibibytes<Bytes: Collection<UInt8>>(_ field: Bytes) -> Int? {
        let space = UInt8(ascii: " ")
        // Dirty and Writeback in bytes add up without overflow.
        let limit = Int.max >> 11
        var value = 0
        var digits = 0
        var rest = field.drop { $0 == space }
        while let byte = rest.first, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
            guard value <= (limit - 9) / 10 else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
            rest = rest.dropFirst()
        }
        guard digits > 0, rest.elementsEqual(" kB".utf8) else { return nil }
        return value
    }
}
