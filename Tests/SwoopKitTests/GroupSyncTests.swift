import Foundation
import NIOConcurrencyHelpers
import SwoopTesting
import Testing

@testable import SwoopKit

/// `GroupSync` is a group commit: a caller is served by a flush that started after it called, and
/// callers who arrive while a flush runs share the next one. The callers here are real threads
/// (`sync()` blocks), and each test holds the first flush until the others are seen waiting.
@Suite("GroupSync: one flush for the callers who wait together", .serialized, .timeLimit(.minutes(2)))
struct GroupSyncTests {
    @Test func aCallerArrivingDuringAFlushIsServedByTheNextOne() async throws {
        let flushes = ScriptedFlushes()
        let sync = GroupSync(flush: flushes.flush)
        let first = SyncCaller("A", sync, flushes.timeline)
        try #require(await flushes.timeline.waitFor("flush 1 started"))
        let second = SyncCaller("B", sync, flushes.timeline)
        try #require(await second.isWaitingInsideSync())
        // Flush 1 may have started before B's write: it must not count for B.
        #expect(second.result == nil)

        flushes.releaseFirst()
        try #require(await first.finishes())
        try #require(await second.finishes())
        #expect(flushes.count == 2)
        let t = flushes.timeline
        #expect(t["A returned"] > t["flush 1 finished"])
        #expect(t["B called"] < t["flush 2 started"])
        #expect(t["B returned"] > t["flush 2 finished"])
        #expect(first.succeeded && second.succeeded)
    }

    @Test func eightCallersArrivingDuringOneFlushShareTheNextOne() async throws {
        let flushes = ScriptedFlushes()
        let sync = GroupSync(flush: flushes.flush)
        let first = SyncCaller("A", sync, flushes.timeline)
        try #require(await flushes.timeline.waitFor("flush 1 started"))
        let waiting = (1...8).map { SyncCaller("W\($0)", sync, flushes.timeline) }
        for caller in waiting { try #require(await caller.isWaitingInsideSync()) }

        flushes.releaseFirst()
        try #require(await first.finishes())
        for caller in waiting { try #require(await caller.finishes()) }
        #expect(flushes.count == 2)
        let t = flushes.timeline
        for caller in waiting {
            #expect(t["\(caller.name) called"] < t["flush 2 started"])
            #expect(t["\(caller.name) returned"] > t["flush 2 finished"])
            #expect(caller.succeeded)
        }
        #expect(first.succeeded)
    }

    @Test func aFailedFlushThrowsToEveryCallerItServed() async throws {
        let flushes = ScriptedFlushes(failing: [2])
        let sync = GroupSync(flush: flushes.flush)
        let first = SyncCaller("A", sync, flushes.timeline)
        try #require(await flushes.timeline.waitFor("flush 1 started"))
        let second = SyncCaller("B", sync, flushes.timeline)
        let third = SyncCaller("C", sync, flushes.timeline)
        try #require(await second.isWaitingInsideSync())
        try #require(await third.isWaitingInsideSync())

        flushes.releaseFirst()
        try #require(await first.finishes())
        try #require(await second.finishes())
        try #require(await third.finishes())
        #expect(flushes.count == 2)
        #expect(first.succeeded)
        #expect(second.failure == FlushFailed(flush: 2))
        #expect(third.failure == FlushFailed(flush: 2))
    }

    /// A failed flush is final: one who arrived while it ran, and one who comes later, get its error
    /// without another flush (Linux may have dropped the pages it could not write).
    @Test func afterAFailedFlushEverySyncThrowsItsError() async throws {
        let flushes = ScriptedFlushes(failing: [1])
        let sync = GroupSync(flush: flushes.flush)
        let first = SyncCaller("A", sync, flushes.timeline)
        try #require(await flushes.timeline.waitFor("flush 1 started"))
        let second = SyncCaller("B", sync, flushes.timeline)
        try #require(await second.isWaitingInsideSync())

        flushes.releaseFirst()
        try #require(await first.finishes())
        try #require(await second.finishes())
        #expect(first.failure == FlushFailed(flush: 1))
        #expect(second.failure == FlushFailed(flush: 1))

        let later = SyncCaller("D", sync, flushes.timeline)
        try #require(await later.finishes())
        #expect(later.failure == FlushFailed(flush: 1))
        #expect(flushes.count == 1)
    }
}

struct FlushFailed: Error, Equatable {
    let flush: Int
}

/// The order in which things happened across threads: each mark takes the next tick.
final class Timeline: Sendable {
    private let state = NIOLockedValueBox<(tick: Int, marks: [String: Int])>((0, [:]))

    func mark(_ name: String) {
        state.withLockedValue { state in
            state.tick += 1
            state.marks[name] = state.tick
        }
    }

    /// The tick of `name`, or `Int.max` when it has not happened (so "before" checks fail).
    subscript(name: String) -> Int {
        state.withLockedValue { $0.marks[name] } ?? Int.max
    }

    /// Waits up to 10 s for `name` to happen.
    func waitFor(_ name: String) async -> Bool {
        await eventually(timeout: .seconds(10)) { self[name] != Int.max }
    }
}

/// A flush function for `GroupSync` that counts its calls, marks their start and end, holds the
/// first one until released, and fails the calls whose number is in `failing`.
final class ScriptedFlushes: Sendable {
    let timeline = Timeline()
    private let calls = NIOLockedValueBox(0)
    private let gate = DispatchSemaphore(value: 0)
    private let failing: Set<Int>

    init(failing: Set<Int> = []) {
        self.failing = failing
    }

    var count: Int { calls.withLockedValue { $0 } }

    var flush: @Sendable () throws -> Void {
        { [self] in
            let n = calls.withLockedValue { calls in
                calls += 1
                return calls
            }
            timeline.mark("flush \(n) started")
            // Bounded: a test that never releases fails on its own expectations, it does not hang.
            // Longer than the callers may take to be seen waiting (on a loaded machine, seconds):
            // a first flush that ended by itself would serve them before they were seen.
            if n == 1 { _ = gate.wait(timeout: .now() + .seconds(60)) }
            timeline.mark("flush \(n) finished")
            if failing.contains(n) { throw FlushFailed(flush: n) }
        }
    }

    func releaseFirst() { gate.signal() }
}

/// One caller of `GroupSync.sync()` on its own thread (it blocks, so never on the cooperative pool).
final class SyncCaller: Sendable {
    let name: String
    /// The thread's `/proc` directory (`/proc/PID/task/TID`), to see where it waits.
    private let thread = NIOLockedValueBox<String?>(nil)
    private let outcome = NIOLockedValueBox<Result<Void, any Error>?>(nil)

    private let timeline: Timeline

    init(_ name: String, _ sync: GroupSync, _ timeline: Timeline) {
        self.name = name
        self.timeline = timeline
        Thread { [self] in
            let task = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")
            thread.withLockedValue { $0 = task.map { "/proc/" + $0 } }
            timeline.mark("\(name) called")
            let result = Result { try sync.sync() }
            timeline.mark("\(name) returned")
            outcome.withLockedValue { $0 = result }
        }.start()
    }

    var result: Result<Void, any Error>? { outcome.withLockedValue { $0 } }

    var succeeded: Bool {
        if case .success = result { return true }
        return false
    }

    var failure: FlushFailed? {
        if case .failure(let error) = result { return error as? FlushFailed }
        return nil
    }

    /// Waits up to 10 s for `sync()` to return.
    func finishes() async -> Bool {
        await eventually(timeout: .seconds(10)) { result != nil }
    }

    /// Waits (up to 30 s: a loaded machine may keep a thread from running that long) until the
    /// thread, having called `sync()`, sleeps in a futex: the condition variable, as the flush runs
    /// without the lock held. Seen several times in a row, so a moment of lock contention on the
    /// way in does not count.
    func isWaitingInsideSync() async -> Bool {
        var seen = 0
        return await eventually(timeout: .seconds(30)) {
            guard let task = thread.withLockedValue({ $0 }), timeline["\(name) called"] != Int.max, result == nil,
                let syscall = try? String(contentsOfFile: task + "/syscall", encoding: .utf8),
                syscall.split(separator: " ").first == Self.futexSyscall
            else {
                seen = 0
                return false
            }
            seen += 1
            return seen >= 5
        }
    }

    #if arch(x86_64)
    private static let futexSyscall: Substring = "202"
    #else
    private static let futexSyscall: Substring = "98"
    #endif
}
