import Foundation

/// Flushes one file (or directory) to disk on behalf of many callers: every write a caller finished
/// before calling ``sync()`` is on disk when it returns, and callers who arrive while a flush runs
/// share the next one instead of each paying for their own (a group commit).
///
/// A failed flush is final: Linux reports an `fsync` error once and may drop the pages it could not
/// write, so a later flush that succeeds proves nothing about them. Every later ``sync()`` throws
/// the same error.
package final class GroupSync: @unchecked Sendable {
    private let condition = NSCondition()
    private let flush: @Sendable () throws -> Void
    // Guarded by `condition`.
    private var started: UInt64 = 0
    private var finished: UInt64 = 0
    private var running = false
    private var failure: (any Error)?

    /// - Parameter flush: Makes everything written so far durable (`fsync` of the file); throws when
    ///   it cannot.
    package init(flush: @escaping @Sendable () throws -> Void) {
        self.flush = flush
    }

    /// Returns once a flush that started after this call has finished. Blocks: call it from a disk
    /// thread (``DiskWork``) or where blocking is acceptable.
    ///
    /// - Throws: The error of that flush, or of any flush that failed before.
    package func sync() throws {
        condition.lock()
        defer { condition.unlock() }
        if let failure { throw failure }
        // A flush already running may have started before the caller's write: it does not count.
        let needed = started + 1
        while finished < needed, failure == nil {
            if running {
                condition.wait()
                continue
            }
            running = true
            started += 1
            let generation = started
            condition.unlock()
            var error: (any Error)?
            do { try flush() } catch let thrown { error = thrown }
            condition.lock()
            running = false
            finished = generation
            if let error { failure = error }
            condition.broadcast()
        }
        if let failure { throw failure }
    }
}
