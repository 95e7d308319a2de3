import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

/// The rate a download shows: from its samples, and from its first progress on.
@Suite("Speed", .timeLimit(.minutes(1)))
struct SpeedMeterTests {
    @Test func aRateNeedsTwoSamplesAtDifferentTimes() {
        let start = ContinuousClock.now
        var meter = SpeedMeter()
        #expect(meter.bytesPerSecond == 0)
        meter.record(bytes: 1_000, at: start)
        #expect(meter.bytesPerSecond == 0)
        meter.record(bytes: 11_000, at: start + .milliseconds(500))
        #expect(meter.bytesPerSecond == 20_000)
    }

    @Test func theWindowDropsOldSamplesButKeepsTwo() {
        let start = ContinuousClock.now
        var meter = SpeedMeter()
        meter.record(bytes: 0, at: start)
        meter.record(bytes: 1_000_000, at: start + .seconds(1))
        // 10 s later: the first is dropped, the two last stay.
        meter.record(bytes: 1_100_000, at: start + .seconds(11))
        #expect(meter.bytesPerSecond == 10_000)
        meter.record(bytes: 1_200_000, at: start + .milliseconds(11_500))
        #expect(meter.bytesPerSecond == 200_000)
    }

    /// A restart from zero (the body's start recorded at 0 after samples of the earlier attempt)
    /// starts over: the rate is never negative.
    @Test func aCountBelowTheLastStartsOver() {
        let start = ContinuousClock.now
        var meter = SpeedMeter()
        meter.record(bytes: 500_000, at: start)
        meter.record(bytes: 900_000, at: start + .seconds(1))
        meter.record(bytes: 0, at: start + .milliseconds(1_500))
        #expect(meter.bytesPerSecond == 0)
        meter.record(bytes: 50_000, at: start + .seconds(2))
        #expect(meter.bytesPerSecond == 100_000)
    }

    /// From a slow server, the first progress already shows a rate (it showed 0 B/s until a second
    /// sample: most of a small file's time).
    @Test(arguments: [1, 3])
    func aSlowDownloadsFirstProgressShowsARate(connections: Int) async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        let size = connections == 1 ? 40_000 : 3 << 20
        let body = f.serve("/slow.bin", size: size)
        f.server.setDefault("/slow.bin", .throttle(bytesPerSecond: size * 2))
        var request = try f.request("/slow.bin")
        if connections > 1 {
            request.settings.maxConnections = connections
            request.settings.minSplitSize = 1 << 20
        }
        let (result, events) = await f.download(request)
        _ = try result.get()
        #expect(sha256(file: f.path("slow.bin")) == sha256(body))
        let rates = events.compactMap { event -> Double? in
            guard case .progress(let download) = event else { return nil }
            return download.bytesPerSecond
        }
        #expect(!rates.isEmpty)
        #expect(rates.allSatisfy { $0 > 0 && $0 < 100_000_000 }, "\(rates)")
    }
}
