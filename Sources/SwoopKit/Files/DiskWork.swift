import Foundation
import NIOPosix

/// Where disk work that blocks runs: `fdatasync`, `fsync` and the store's durable commits.
///
/// Swift's cooperative pool has one thread per core. A download that waits there for the disk
/// holds a thread every other download needs for its bytes, and on two cores no more than two
/// downloads could flush at once. These threads only ever wait for the disk, so many downloads
/// flush in parallel and the cooperative threads stay free.
enum DiskWork {
    /// Enough threads for the flushes of as many downloads as usually run at once; more simply queue.
    static let threadCount = 16

    private static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: threadCount)
        pool.start()
        return pool
    }()

    /// Runs `body` on a disk thread and returns its result.
    /// Not cancellable: work handed to the disk (a save of progress as a transfer stops, a flush)
    /// is finished, whatever happens to the waiting task meanwhile.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            pool.submit { state in
                guard case .active = state else {
                    return continuation.resume(throwing: SwoopError(.other, "the disk threads have stopped"))
                }
                continuation.resume(with: Result { try body() })
            }
        }
    }
}

/// Carries a value that is not `Sendable` to a disk thread and back while its owner waits for the
/// result, so that only one thread uses it at any time.
struct Exclusive<Value>: @unchecked Sendable {
    let value: Value
}
