import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
            throw SwoopError(.fileSystem, "cannot use directory \(path): it is not a directory")
        }
        guard access(path, W_OK | X_OK) == 0 else {
            throw SwoopError.fileSystem("write to directory", path: path, errno: errno)
        }
    }

    /// Gives `part` the name `final`. Without `replace`, fails if `final` appeared meanwhile. The
    /// directory is not flushed here (see ``DirectorySyncs``).
    static func publish(_ part: String, as final: String, replace: Bool) throws {
        if replace {
            guard rename(part, final) == 0 else { throw SwoopError.fileSystem("rename \(part) to", path: final, errno: errno) }
        } else if let failure = renameWithoutReplacing(part, as: final), failure == 0 || failure == EEXIST {
            guard failure == 0 else { throw appearedMeanwhile(part, final) }
        } else if link(part, final) == 0 {
            // A file system without RENAME_NOREPLACE: a hard link never replaces either.
            _ = unlink(part)
        } else if errno == EEXIST {
            throw appearedMeanwhile(part, final)
        } else {
            // File systems without hard links: the check and the rename are not atomic there.
            guard !exists(final) else {
                throw SwoopError(.destinationExists, "cannot rename \(part): \(final) already exists")
            }
            guard rename(part, final) == 0 else { throw SwoopError.fileSystem("rename \(part) to", path: final, errno: errno) }
        }
    }

    /// The rename lost a race: `final` was taken while the download ran.
    private static func appearedMeanwhile(_ part: String, _ final: String) -> SwoopError {
        SwoopError(.destinationExists, "cannot rename \(part): \(final) appeared meanwhile; the download is kept in \(part)")
    }

    /// `renameat2` with `RENAME_NOREPLACE`: one atomic step that never replaces (ext4, XFS, Btrfs,
    /// tmpfs). Returns 0 or the `errno`, or `nil` when the C library has no `renameat2`.
    private static func renameWithoutReplacing(_ part: String, as final: String) -> Int32? {
        guard let renameat2 else { return nil }
        return renameat2(AT_FDCWD, part, AT_FDCWD, final, 1 /* RENAME_NOREPLACE */) == 0 ? 0 : errno
    }

    /// glibc's `renameat2`, which the Glibc module does not export (it needs `_GNU_SOURCE`).
    private static let renameat2 = CFunctions.lookUp(
        "renameat2", as: (@convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32).self
    )

    /// Creates `path` and any missing parents (`mkdir -p`), or finds it there as a directory.
    ///
    /// - Parameters:
    ///   - what: What the directory is for, for the message ("state directory").
    ///   - mode: The mode of the directories it makes (less the umask): private by default.
    /// - Throws: ``SwoopError/Code/fileSystem`` naming the path and the system's reason.
    package static func createDirectories(_ path: String, what: String, mode: mode_t = 0o700) throws {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var current = ""
        let components = absolute.split(separator: "/")
        for (index, component) in components.enumerated() {
            current += "/" + component
            if mkdir(current, mode) == 0 { continue }
            let code = errno
            var info = stat()
            let isPath = index == components.count - 1
            guard code == EEXIST, stat(current, &info) == 0 else {
                // As `mkdir -p` says it; a parent that could not be made is named.
                try refuse(code, "cannot create \(what) \(path): \(isPath ? "" : current + ": ")")
            }
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw SwoopError(.fileSystem, "cannot use \(what) \(path): \(isPath ? "it" : current) is not a directory")
            }
        }
    }

    /// Throws `message` followed by the system's reason for `code` (a full disk is ``SwoopError/Code/diskFull``).
    private static func refuse(_ code: Int32, _ message: String) throws -> Never {
        let reason = String(cString: strerror(code))
        throw SwoopError(code == ENOSPC || code == EDQUOT ? .diskFull : .fileSystem, message + reason)
    }

    /// Writes every file of the file system holding the open file `fd` to disk, data and metadata,
    /// and flushes the disk's cache (`syncfs`). Returns `nil` or the `errno` of a failure: an error
    /// writing any file of that file system since `fd` was opened (Linux 5.8 on; the files' own
    /// errors are each file's to report, ``PartFile/confirmFlushed(upTo:)``).
    static func syncFileSystem(holding fd: Int32) -> Int32? {
        guard let syncfs = syncfsFunction else { return ENOSYS }
        return syncfs(fd) == 0 ? nil : errno
    }

    /// glibc's `syncfs`, which the Glibc module does not export (it needs `_GNU_SOURCE`).
    private static let syncfsFunction = CFunctions.lookUp("syncfs", as: (@convention(c) (Int32) -> Int32).self)

    /// The device of the file system holding the open file `fd`, or `nil` when `fstat` fails.
    static func device(of fd: Int32) -> UInt64? {
        var info = stat()
        return fstat(fd, &info) == 0 ? UInt64(info.st_dev) : nil
    }

    /// The type of the file system holding the open file `fd` (`statfs`'s `f_type`, its magic
    /// number), or `nil` when `fstatfs` fails.
    static func type(of fd: Int32) -> Int? {
        guard let fstatfs = fstatfsFunction else { return nil }
        // `struct statfs` begins with `f_type`, a C `long` (Swift's `Int`) on Linux; 512 bytes
        // hold the whole struct (120 on x86-64).
        return withUnsafeTemporaryAllocation(byteCount: 512, alignment: MemoryLayout<Int>.alignment) { buffer in
            fstatfs(fd, buffer.baseAddress!) == 0 ? buffer.load(as: Int.self) : nil
        }
    }

    /// glibc's `fstatfs`, which the Glibc module does not export (`sys/vfs.h`).
    private static let fstatfsFunction = CFunctions.lookUp(
        "fstatfs", as: (@convention(c) (Int32, UnsafeMutableRawPointer) -> Int32).self
    )

    /// What the machine has waiting to be written to its disks and being written, in bytes
    /// (``GroupFlush/dirtyBytes(meminfo:)``), or `nil` when `/proc/meminfo` cannot tell.
    static func dirtyBytesOnMachine() -> Int? {
        let fd = Glibc.open("/proc/meminfo", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { _ = Glibc.close(fd) }
        // The whole file (about 1.5 KiB; the two lines come in its first half) in one read.
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return GroupFlush.dirtyBytes(meminfo: buffer[..<count])
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
