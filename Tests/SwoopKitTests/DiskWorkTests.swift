import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import SwoopKit

/// `DiskWork` exists so that downloads waiting for the disk wait side by side, not in a line.
@Suite("DiskWork: blocking disk work runs in parallel", .timeLimit(.minutes(1)))
struct DiskWorkTests {
    /// Each job blocks until all of them are running: they pass only if as many threads as the
    /// pool promises run them at once (fewer would leave some waiting, and every job times out).
    @Test func asManyBlockingJobsAsThePoolHasThreadsRunAtOnce() async throws {
        let count = DiskWork.threadCount
        let arrived = NIOLockedValueBox(0)
        let allIn = DispatchSemaphore(value: 0)
        let results = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask {
                    try await DiskWork.run {
                        if arrived.withLockedValue({ $0 += 1; return $0 }) == count {
                            for _ in 0..<count { allIn.signal() }
                        }
                        return allIn.wait(timeout: .now() + 10) == .success
                    }
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == Array(repeating: true, count: count))
    }

    @Test func anErrorThrownOnADiskThreadReachesTheCaller() async {
        await #expect(throws: SwoopError.self) {
            try await DiskWork.run { throw SwoopError(.other, "disk full") }
        }
    }
}
