import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The one directory a test process keeps its files in: `TMPDIR/swoop-tests-PID`.
///
/// Every temporary directory or file a test makes goes under it (``makeTemporaryDirectory(_:)``,
/// ``scratchPath(_:suffix:)``), so a run of the tests leaves nothing behind: the directory is
/// removed when the process exits, and one left by a process that died first (a crash, a
/// `kill -9`) is removed by the next run that starts.
public enum TestScratch {
    /// The directory, made (and the sweep and the exit handler set up) on first use.
    public static var root: String { made }

    private static let made: String = {
        sweepDeadProcesses()
        let path = root(of: getpid())
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        atexit { TestScratch.removeTree(TestScratch.root(of: getpid())) }
        return path
    }()

    private static let prefix = "swoop-tests-"

    private static func root(of pid: pid_t) -> String {
        NSTemporaryDirectory() + prefix + String(pid)
    }

    /// Removes the scratch directories of test processes that no longer exist.
    private static func sweepDeadProcesses() {
        let base = NSTemporaryDirectory()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        for name in names where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), pid != getpid() else { continue }
            if kill(pid, 0) == -1 && errno == ESRCH { removeTree(base + name) }
        }
    }

    /// Removes `path` and everything under it, giving each directory back its owner's permissions
    /// first (some tests take them away to provoke a failure).
    private static func removeTree(_ path: String) {
        makeDirectoriesWritable(path)
        try? FileManager.default.removeItem(atPath: path)
    }

    private static func makeDirectoriesWritable(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return }
        chmod(path, 0o700)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            makeDirectoriesWritable(path + "/" + name)
        }
    }
}

/// A fresh directory under ``TestScratch/root``, named `PREFIX-UUID`, created.
public func makeTemporaryDirectory(_ prefix: String) throws -> String {
    let path = scratchPath(prefix)
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// A fresh path under ``TestScratch/root``, `PREFIX-UUID` followed by `suffix`, not created.
public func scratchPath(_ prefix: String, suffix: String = "") -> String {
    TestScratch.root + "/\(prefix)-\(UUID().uuidString)\(suffix)"
}
