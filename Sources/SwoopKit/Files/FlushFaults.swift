#if canImport(Glibc)
import Glibc
#endif
import NIOConcurrencyHelpers

/// Flush failures that tests arm (`@testable`), by file path: a disk that fails a flush (`EIO`)
/// cannot be had on demand. A real run arms none and pays one look under a lock per flush.
enum FlushFaults {
    private struct Fault {
        var errno: Int32
        /// Whether the finish's flush (the first with metadata) has come.
        var tripped = false
    }

    private static let faults = NIOLockedValueBox<[String: Fault]>([:])

    /// Makes the flushes of `path` fail from the first with metadata (a finish's, before the
    /// download is recorded complete) on.
    static func armFromFinish(_ path: String, errno: Int32 = EIO) {
        faults.withLockedValue { $0[path] = Fault(errno: errno) }
    }

    static func disarm(_ path: String) {
        faults.withLockedValue { $0[path] = nil }
    }

    /// The `errno` this flush of `path` fails with, if it is armed to fail.
    static func failure(path: String, metadata: Bool) -> Int32? {
        faults.withLockedValue { faults in
            guard var fault = faults[path], fault.tripped || metadata else { return nil }
            fault.tripped = true
            faults[path] = fault
            return fault.errno
        }
    }
}
