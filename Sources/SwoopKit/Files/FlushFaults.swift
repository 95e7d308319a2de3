#if canImport(Glibc)
import Glibc
#endif
import NIOConcurrencyHelpers

/// Flush failures that tests arm (`@testable`), by file path: a disk that fails a flush (`EIO`)
/// cannot be had on demand. A real run arms none and pays one look under a lock per flush.
enum FlushFaults {
    /// From when an armed path's flushes fail.
    enum From: Sendable {
        /// Every flush.
        case first
        /// The first flush with metadata (a finish's, before the download is recorded complete)
        /// and every flush after it.
        case finish
    }

    private struct Fault {
        var from: From
        var errno: Int32
        var tripped = false
    }

    private static let faults = NIOLockedValueBox<[String: Fault]>([:])

    static func arm(_ path: String, from: From, errno: Int32 = EIO) {
        faults.withLockedValue { $0[path] = Fault(from: from, errno: errno) }
    }

    static func disarm(_ path: String) {
        faults.withLockedValue { $0[path] = nil }
    }

    /// The `errno` this flush of `path` fails with, if it is armed to fail.
    static func failure(path: String, metadata: Bool) -> Int32? {
        faults.withLockedValue { faults in
            guard var fault = faults[path] else { return nil }
            if fault.from == .finish, !fault.tripped, !metadata { return nil }
            fault.tripped = true
            faults[path] = fault
            return fault.errno
        }
    }
}
