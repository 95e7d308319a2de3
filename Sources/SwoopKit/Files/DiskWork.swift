import Foundation
import NIOCore

/// Where disk work that blocks runs: `fdatasync`, `fsync` and the store's durable commits.
///
/// Swift's cooperative pool has one thread per core. A download that waits there for the disk
/// holds a thread every other download needs for its bytes, and on two cores no more than two
/// downloads could flush at once. These threads only ever wait for the disk, so many downloads
/// flush in parallel and the cooperative threads stay free.
enum DiskWork {
    /// Enough threads for the flushes of as many downloads as usually run at once; more simply queue.
    static let threadCount = 16

    private static let threads = DiskThreads(limit: threadCount)

    /// Starts `work` on a disk thread and returns at once.
    static func submit(_ work: @escaping @Sendable () -> Void) {
        threads.submit(work)
    }

    /// Runs `body` for each index in `0..<count`, on the calling thread and, when the first index
    /// took at least `slow`, on up to `helpers` disk threads at once; returns when every one has
    /// run. The caller takes indices too, so the work is done even when every disk thread is busy:
    /// helpers only share it. For flushes of several files, whose `fsync`s the disk serves together
    /// when they come at once; where a flush costs next to nothing (tmpfs), waking helpers would
    /// cost more than it saves.
    static func forEach(_ count: Int, helpers: Int, whenSlowerThan slow: Duration = .zero, _ body: @escaping @Sendable (Int) -> Void) {
        threads.forEach(count, helpers: helpers, whenSlowerThan: slow, body)
    }

    /// Runs `body` on a disk thread and returns its result.
    /// Not cancellable: work handed to the disk (a save of progress as a transfer stops, a flush)
    /// is finished, whatever happens to the waiting task meanwhile.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            threads.submit { continuation.resume(with: Result { try body() }) }
        }
    }
}

/// Threads that wait for the disk, started only when work finds none idle (up to `limit`) and
/// then kept. A fixed pool (NIO's `NIOThreadPool`) starts all its threads at once: sixteen
/// threads, their stacks and malloc arenas, for a `swoop get` of one small file that needs one.
final class DiskThreads: @unchecked Sendable {
    private let limit: Int
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var queue = CircularBuffer<@Sendable () -> Void>()
    private var idle = 0
    /// Threads started that have not yet come to wait: each will take a job as an idle one does.
    private var starting = 0
    private var started = 0

    init(limit: Int) {
        self.limit = limit
    }

    /// The number of threads started so far.
    var threadCount: Int {
        condition.withLock { started }
    }

    /// The number of threads waiting for work (for tests).
    var idleCount: Int {
        condition.withLock { idle }
    }

    /// Runs `work` on a disk thread: an idle one, else a new one while under the limit, else the
    /// first to come free.
    func submit(_ work: @escaping @Sendable () -> Void) {
        let startsThread = condition.withLock {
            queue.append(work)
            condition.signal()
            // Each idle (or starting) thread takes one job: a job beyond them needs a thread of its own.
            guard queue.count > idle + starting, started < limit else { return false }
            started += 1
            starting += 1
            return true
        }
        if startsThread {
            let thread = Thread { [self] in
                // Named from the thread itself: Foundation on Linux does not pass a name set before
                // `start()` to the kernel, so the thread kept its creator's (an event loop's) name in
                // `top`, `perf` and `gdb`.
                _ = Self.setThreadName?(pthread_self(), "swoop-disk")
                serve()
            }
            thread.start()
        }
    }

    /// ``DiskWork/forEach(_:helpers:whenSlowerThan:_:)`` on these threads.
    func forEach(_ count: Int, helpers: Int, whenSlowerThan slow: Duration = .zero, _ body: @escaping @Sendable (Int) -> Void) {
        guard count > 0 else { return }
        let shared = SharedIndices(count: count)
        let started = ContinuousClock.now
        shared.work(body, once: true)
        if ContinuousClock.now - started >= slow {
            for _ in 0..<max(0, min(helpers, count - 2)) {
                submit { shared.work(body) }
            }
        }
        shared.work(body)
        shared.waitUntilDone()
    }

    /// glibc's `pthread_setname_np`, which the Glibc module does not export (it needs `_GNU_SOURCE`).
    private static let setThreadName = CFunctions.lookUp(
        "pthread_setname_np", as: (@convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32).self
    )

    private func serve() {
        condition.lock()
        starting -= 1
        while true {
            while queue.isEmpty {
                idle += 1
                condition.wait()
                idle -= 1
            }
            let work = queue.removeFirst()
            condition.unlock()
            work()
            condition.lock()
        }
    }
}

/// The indices ``DiskWork/forEach(_:helpers:whenSlowerThan:_:)`` hands out, one at a time, to whichever thread
/// asks next, and how many have been run.
private final class SharedIndices: @unchecked Sendable {
    private let count: Int
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var next = 0
    private var done = 0

    init(count: Int) { self.count = count }

    /// Runs `body` for the indices not yet taken, one after the other, until none is left (or
    /// for one, with `once`).
    func work(_ body: (Int) -> Void, once: Bool = false) {
        while let index = take() {
            body(index)
            condition.withLock {
                done += 1
                if done == count { condition.broadcast() }
            }
            if once { return }
        }
    }

    func waitUntilDone() {
        condition.withLock {
            while done < count { condition.wait() }
        }
    }

    private func take() -> Int? {
        condition.withLock {
            guard next < count else { return nil }
            defer { next += 1 }
            return next
        }
    }
}

/// Carries a value that is not `Sendable` to a disk thread and back while its owner waits for the
/// result, so that only one thread uses it at any time.
struct Exclusive<Value>: @unchecked Sendable {
    let value: Value
}
