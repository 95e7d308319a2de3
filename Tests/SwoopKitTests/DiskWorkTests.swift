import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import SwoopKit

/// `DiskWork` exists so that downloads waiting for the disk wait side by side, not in a line.
@Suite("DiskWork: blocking disk work runs in parallel", .timeLimit(.minutes(1)))
struct DiskWorkTests {
    /// Runs `count` jobs on `run` that each block until all of them are running: they pass only if
    /// that many threads run them at once (fewer would leave some waiting, and every job times out).
    static func blockingJobsMeet(_ count: Int, run: @escaping @Sendable (@escaping @Sendable () -> Bool) async throws -> Bool) async throws -> [Bool] {
        let arrived = NIOLockedValueBox(0)
        let allIn = DispatchSemaphore(value: 0)
        return try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask {
                    try await run {
                        if arrived.withLockedValue({ $0 += 1; return $0 }) == count {
                            for _ in 0..<count { allIn.signal() }
                        }
                        return allIn.wait(timeout: .now() + 10) == .success
                    }
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
    }

    /// On a pool of its own: jobs that block the threads they run on must not hold the disk threads
    /// every other test's downloads use.
    @Test func asManyBlockingJobsAsThePoolHasThreadsRunAtOnce() async throws {
        let threads = DiskThreads(limit: DiskWork.threadCount)
        let results = try await Self.blockingJobsMeet(DiskWork.threadCount) { job in
            try await withCheckedThrowingContinuation { continuation in threads.submit { continuation.resume(returning: job()) } }
        }
        #expect(results == Array(repeating: true, count: DiskWork.threadCount))
        #expect(threads.threadCount == DiskWork.threadCount)
    }

    /// Named for `top`, `perf` and `gdb` (they had their creator's name, an event loop's).
    @Test func diskThreadsAreNamed() async throws {
        let name = try await DiskWork.run {
            (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(name == "swoop-disk")
    }

    /// Every index runs once, some on helper threads beside the caller; and when no thread of
    /// the pool is free, the caller runs them all and returns (the helpers, when they come, find
    /// nothing left).
    @Test func forEachRunsEveryIndexOnceWithOrWithoutHelpers() async throws {
        let threads = DiskThreads(limit: 4)
        let runs = NIOLockedValueBox([Int](repeating: 0, count: 200))
        let callers = NIOLockedValueBox(Set<String>())
        threads.forEach(200, helpers: 3) { index in
            runs.withLockedValue { $0[index] += 1 }
            callers.withLockedValue { _ = $0.insert("\(pthread_self())") }
            usleep(100)
        }
        #expect(runs.withLockedValue { $0 } == Array(repeating: 1, count: 200))
        #expect(callers.withLockedValue { $0.count } > 1)

        let busy = DiskThreads(limit: 1)
        let release = DispatchSemaphore(value: 0)
        busy.submit { release.wait() }
        let me = "\(pthread_self())"
        let alone = NIOLockedValueBox([String]())
        busy.forEach(5, helpers: 3) { _ in alone.withLockedValue { $0.append("\(pthread_self())") } }
        release.signal()
        #expect(alone.withLockedValue { $0 } == Array(repeating: me, count: 5))

        // A first index quicker than the threshold: no helper is asked, the caller runs them all.
        let quick = DiskThreads(limit: 4)
        let ran = NIOLockedValueBox([String]())
        quick.forEach(50, helpers: 3, whenSlowerThan: .seconds(10)) { _ in ran.withLockedValue { $0.append("\(pthread_self())") } }
        #expect(ran.withLockedValue { $0 } == Array(repeating: me, count: 50))
        #expect(quick.threadCount == 0)
    }

    @Test func diskWorkReturnsWhatItsBodyReturns() async throws {
        #expect(try await DiskWork.run { 6 * 7 } == 42)
    }

    /// Threads start as work finds none idle: one job after another, each submitted once the thread
    /// that ran the last is back waiting, needs one thread; jobs that wait for each other need as
    /// many as they are, never more than the limit (the rest queue).
    @Test func threadsStartOnlyWhenWorkFindsNoneIdle() async throws {
        let threads = DiskThreads(limit: 3)
        #expect(threads.threadCount == 0)
        for value in 0..<20 {
            let echoed = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
                threads.submit { continuation.resume(returning: value) }
            }
            #expect(echoed == value)
            // The thread resumed us before it went back to waiting: on a loaded machine the next
            // job could come first, and find none idle (CI once saw 3 threads here).
            let deadline = ContinuousClock.now + .seconds(10)
            while threads.idleCount < threads.threadCount, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        #expect(threads.threadCount == 1)
        let results = try await Self.blockingJobsMeet(3) { job in
            try await withCheckedThrowingContinuation { continuation in threads.submit { continuation.resume(returning: job()) } }
        }
        #expect(results == [true, true, true])
        #expect(threads.threadCount == 3)
        // Over the limit, work waits for a thread to come free; all of it is done.
        let done = NIOLockedValueBox(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                        threads.submit {
                            Thread.sleep(forTimeInterval: 0.002)
                            done.withLockedValue { $0 += 1 }
                            continuation.resume()
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(done.withLockedValue { $0 } == 12)
        #expect(threads.threadCount == 3)
    }

    @Test func anErrorThrownOnADiskThreadReachesTheCaller() async {
        await #expect(throws: SwoopError.self) {
            try await DiskWork.run { throw SwoopError(.other, "disk full") }
        }
    }
}
