import Foundation
import Testing

@testable import SwoopKit

/// The shared limiter on the real clock (lower bounds only, and generous upper bounds where a
/// change must wake a waiter), and the manager's registry of limiters.
@Suite("RateLimiter and RateLimits", .timeLimit(.minutes(1)))
struct RateLimiterTests {
    static func elapsed(_ body: () async throws -> Void) async rethrows -> Duration {
        let start = ContinuousClock.now
        try await body()
        return ContinuousClock.now - start
    }

    @Test func consumeWaitsForTheRate() async throws {
        let limiter = RateLimiter(bytesPerSecond: 100_000)
        let took = try await Self.elapsed {
            for _ in 0..<10 { try await limiter.consume(10_000) }
        }
        #expect(took >= .milliseconds(950))
    }

    @Test func concurrentCallersShareTheRate() async throws {
        let limiter = RateLimiter(bytesPerSecond: 200_000)
        let took = try await Self.elapsed {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 {
                    group.addTask { for _ in 0..<10 { try await limiter.consume(5_000) } }
                }
                try await group.waitForAll()
            }
        }
        #expect(took >= .milliseconds(950))
    }

    @Test func noLimitDoesNotWait() async throws {
        let limiter = RateLimiter(bytesPerSecond: nil)
        let took = try await Self.elapsed {
            for _ in 0..<1000 { try await limiter.consume(1 << 30) }
        }
        #expect(took < .seconds(10))
    }

    @Test(arguments: [nil, 10 << 20] as [Int?])
    func raisingTheRateWakesAWaiterEarly(newRate: Int?) async throws {
        // 256 KiB at 1 KiB/s would wait 256 s.
        let limiter = RateLimiter(bytesPerSecond: 1 << 10)
        let waiter = Task { try await limiter.consume(256 << 10) }
        try await Task.sleep(for: .milliseconds(200))
        let took = try await Self.elapsed {
            limiter.setRate(newRate)
            try await waiter.value
        }
        // Against 256 s at the old rate: a bound far from both, since a loaded machine once stalled
        // the whole test process for 10 s (a timing figure is a benchmark's, not this test's).
        #expect(took < .seconds(40))
        #expect(limiter.bytesPerSecond == newRate)
    }

    @Test func aWaiterCanBeCancelled() async throws {
        let limiter = RateLimiter(bytesPerSecond: 1)
        let waiter = Task { try await limiter.consume(1 << 20) }
        try await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
    }

    @Test func aThrottleWaitsForTheSlowestOfItsLimiters() async throws {
        let throttle = Throttle(limiters: [RateLimiter(bytesPerSecond: 10 << 20), RateLimiter(bytesPerSecond: 100_000)])
        let took = try await Self.elapsed {
            for _ in 0..<10 { try await throttle.consume(10_000) }
        }
        #expect(took >= .milliseconds(950))
    }

    // MARK: - RateLimits (the manager's registry)

    @Test func aDownloadsRateIsItsOwnElseTheDefault() throws {
        var limits = Configuration.Limits()
        limits.perDownloadBytesPerSecond = 1000
        limits.overallBytesPerSecond = 5000
        let registry = try RateLimits(limits)
        let (a, c, d) = (Download.ID.make(), Download.ID.make(), Download.ID.make())
        // Not running: nothing to change (the stored settings give the rate at start).
        #expect(try registry.set(a, own: .some(10)) == false)

        let throttle = registry.start(a, own: .some(30))
        #expect(throttle.limiters.map(\.bytesPerSecond) == [30, 5000])
        #expect(throttle.limiters.last === registry.overall)
        _ = registry.start(c, own: nil)
        _ = registry.start(d, own: .some(nil))
        #expect([a, c, d].map(registry.runningRate) == [30, 1000, nil])

        // A new default reaches only the downloads without a rate of their own.
        try registry.setDefault(2000)
        #expect([a, c, d].map(registry.runningRate) == [30, 2000, nil])
        #expect(try registry.set(c, own: .some(7)))
        try registry.setDefault(3000)
        #expect(registry.runningRate(c) == 7)
        // Back to following the default.
        #expect(try registry.set(c, own: nil))
        #expect(registry.runningRate(c) == 3000)
        try registry.setDefault(4000)
        #expect(registry.runningRate(c) == 4000)
        try registry.setOverall(nil)
        #expect(registry.overall.bytesPerSecond == nil)

        registry.finish(a)
        #expect(registry.runningRate(a) == nil)
    }

    @Test func ratesBelowOneAreErrorsNamingTheValue() throws {
        var limits = Configuration.Limits()
        limits.overallBytesPerSecond = 0
        let error = #expect(throws: SwoopError.self) { try RateLimits(limits) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("overall rate limit: 0 bytes") == true)
        let registry = try RateLimits(Configuration.Limits())
        #expect(throws: SwoopError.self) { try registry.setDefault(-1) }
        #expect(throws: SwoopError.self) { try registry.setOverall(0) }
        #expect(throws: SwoopError.self) { try registry.set(.make(), own: .some(0)) }
        var settings = DownloadSettings()
        settings.bytesPerSecond = -3
        let named = #expect(throws: SwoopError.self) { try settings.validate() }
        #expect(named?.message.contains("(got -3)") == true)
    }
}
