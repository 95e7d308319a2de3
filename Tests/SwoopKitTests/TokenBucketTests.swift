import Testing

@testable import SwoopKit

/// The token bucket on a simulated clock: no test here sleeps.
@Suite("TokenBucket (pure, simulated clock)")
struct TokenBucketTests {
    let start = ContinuousClock.now

    /// A reader that reads `chunk` bytes, waits what the bucket says (waking up to `lateness` late),
    /// and takes up to `readTime` to get the next chunk; deterministic jitter from `seed`.
    struct Reader {
        var bucket: TokenBucket
        var now: ContinuousClock.Instant
        var chunk: Int
        var lateness: Duration
        var readTime: Duration
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        /// Bytes allowed so far.
        var allowed = 0
        /// Bytes allowed up to the last read that had to wait, and when it was allowed: where the
        /// limit binds. (A reader that stops with credit left has only not used it.)
        var boundBytes = 0
        var boundAt: ContinuousClock.Instant

        init(
            bucket: TokenBucket, now: ContinuousClock.Instant, chunk: Int, lateness: Duration = .zero, readTime: Duration = .zero
        ) {
            (self.bucket, self.now, self.chunk, self.lateness, self.readTime) = (bucket, now, chunk, lateness, readTime)
            boundAt = now
        }

        /// A number in 0..<1 from a 64-bit LCG.
        mutating func jitter() -> Double {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(seed >> 11) / Double(1 << 53)
        }

        /// Reads until `end` (the last read may end past it).
        mutating func read(until end: ContinuousClock.Instant) {
            while now < end {
                step()
            }
        }

        mutating func step() {
            let wait = bucket.take(chunk, now: now)
            now += wait
            allowed += chunk
            if wait > .zero {
                (boundBytes, boundAt) = (allowed, now)
                now += lateness * jitter()
            }
            now += readTime * jitter()
        }
    }

    static func rate(_ bytes: Int, over duration: Duration) -> Double {
        Double(bytes) / duration.seconds
    }

    /// Whether `duration` is `seconds` give or take 10 µs (waits are computed in floating point).
    static func about(_ duration: Duration, _ seconds: Double) -> Bool {
        abs(duration.seconds - seconds) < 1e-5
    }

    // MARK: - Long-run average

    @Test(arguments: [1_000, 10 << 10, 500 << 10, 5 << 20, 100 << 20], [1, 1_000, 16 << 10, 256 << 10])
    func longRunAverageIsTheRateWithinOnePercent(rate: Int, chunk: Int) {
        // The reader is faster than the rate (reading takes at most half a read's share of time),
        // and each wake-up is up to 3 ms late.
        var reader = Reader(
            bucket: TokenBucket(rate: rate, now: start), now: start, chunk: chunk,
            lateness: .milliseconds(3), readTime: min(Duration.milliseconds(2), .seconds(Double(chunk) / Double(rate) / 2))
        )
        // 10 s worth, but at least 200 reads (one read is a small part of the whole) and at most
        // 200 000 (1-byte reads at 100 MiB/s would take a billion).
        let reads = min(max(rate * 10 / chunk, 200), 200_000)
        for _ in 0..<reads { reader.step() }
        let achieved = Self.rate(reader.boundBytes, over: reader.boundAt - start)
        #expect(abs(achieved / Double(rate) - 1) < 0.01, "rate \(rate), chunk \(chunk): \(achieved)")
    }

    @Test(arguments: [1 << 20, 5 << 20, 50 << 20])
    func tenSecondsAtTheIssuesFigureStayWithinFivePercent(rate: Int) {
        // 256 KiB socket reads, a late scheduler and a network that needs time for each read.
        var reader = Reader(
            bucket: TokenBucket(rate: rate, now: start), now: start, chunk: 256 << 10,
            lateness: .milliseconds(5), readTime: .milliseconds(1)
        )
        reader.read(until: start + .seconds(10))
        let achieved = Self.rate(reader.allowed, over: reader.now - start)
        #expect(abs(achieved / Double(rate) - 1) < 0.05)
    }

    @Test func lateWakeUpsAreCreditedBack() {
        // 40 ms late after every 50 ms wait: without the bucket's credit the average would fall to 55%.
        var reader = Reader(bucket: TokenBucket(rate: 5 << 20, now: start), now: start, chunk: 256 << 10)
        for _ in 0..<400 {
            let wait = reader.bucket.take(reader.chunk, now: reader.now)
            reader.now += wait + (wait > .zero ? .milliseconds(40) : .zero)
            reader.allowed += reader.chunk
        }
        let achieved = Self.rate(reader.allowed, over: reader.now - start)
        #expect(abs(achieved / Double(5 << 20) - 1) < 0.01)
    }

    // MARK: - Reads larger than the bucket

    @Test func readsMuchLargerThanTheBucketGoIntoDebtAndWaitTheirShare() {
        var bucket = TokenBucket(rate: 10 << 10, now: start)
        #expect(abs(bucket.capacity - 1024) < 1e-9)
        // 256 KiB at 10 KiB/s: 25.6 s each, allowed one after the other.
        #expect(Self.about(bucket.take(256 << 10, now: start), 25.6))
        #expect(Self.about(bucket.take(256 << 10, now: start), 51.2))
        #expect(Self.about(bucket.take(256 << 10, now: start + .milliseconds(51_200)), 25.6))
    }

    @Test func theBucketStartsEmptySoTheFirstReadWaitsToo() {
        var bucket = TokenBucket(rate: 1000, now: start)
        #expect(Self.about(bucket.take(500, now: start), 0.5))
    }

    @Test func idleTimeSavesAtMostOneBurst() {
        var bucket = TokenBucket(rate: 1 << 20, now: start)
        let later = start + .seconds(60)
        let burst = Int(bucket.capacity)
        #expect(burst == (1 << 20) / 10)
        #expect(bucket.take(burst, now: later) == .zero)
        #expect(Self.about(bucket.take(1 << 20, now: later), 1))
    }

    // MARK: - Rate changes

    @Test func aRateChangeMidwayAppliesFromThenOn() {
        var reader = Reader(bucket: TokenBucket(rate: 10 << 10, now: start), now: start, chunk: 4 << 10)
        let switchAt = start + .seconds(10)
        reader.read(until: switchAt)
        let slowBytes = reader.allowed
        #expect(abs(Double(slowBytes) / Double(100 << 10) - 1) < 0.05)
        reader.bucket.setRate(1 << 20, now: reader.now)
        let fastStart = reader.now
        reader.allowed = 0
        reader.read(until: fastStart + .seconds(10))
        let achieved = Self.rate(reader.allowed, over: reader.now - fastStart)
        #expect(abs(achieved / Double(1 << 20) - 1) < 0.01)
    }

    @Test func loweringTheRateKeepsNoSavedBurstOfTheOldRate() {
        var bucket = TokenBucket(rate: 100 << 20, now: start)
        let later = start + .seconds(10)
        bucket.setRate(1000, now: later)
        // 10 MiB of credit was saved at the old rate; only 0.1 s at the new one remains.
        #expect(bucket.take(100, now: later) == .zero)
        #expect(Self.about(bucket.take(1000, now: later), 1))
    }

    @Test func aLimitAfterNoLimitStartsWithoutCredit() {
        var bucket = TokenBucket(rate: nil, now: start)
        #expect(bucket.take(1 << 30, now: start) == .zero)
        bucket.setRate(1000, now: start + .seconds(60))
        #expect(Self.about(bucket.take(1000, now: start + .seconds(60)), 1))
    }

    @Test func debtIsPaidAtTheNewRate() {
        var bucket = TokenBucket(rate: 1 << 10, now: start)
        let ticket = bucket.reserve(1 << 20, now: start)
        #expect(Self.about(bucket.delay(until: ticket, now: start), 1024))
        let oneSecond = start + .seconds(1)
        bucket.setRate(1 << 20, now: oneSecond)
        // 1 KiB paid in the first second at the old rate; the rest at 1 MiB/s.
        let expected = Double((1 << 20) - (1 << 10)) / Double(1 << 20)
        #expect(abs(bucket.delay(until: ticket, now: oneSecond).seconds - expected) < 1e-9)
        bucket.setRate(nil, now: oneSecond)
        #expect(bucket.delay(until: ticket, now: oneSecond) == .zero)
    }

    // MARK: - Sharing

    @Test func ticketsAreAllowedInTheOrderTheyWereCharged() {
        var bucket = TokenBucket(rate: 1000, now: start)
        let first = bucket.reserve(1000, now: start)
        let second = bucket.reserve(500, now: start)
        let third = bucket.reserve(500, now: start)
        #expect(Self.about(bucket.delay(until: first, now: start), 1))
        #expect(Self.about(bucket.delay(until: second, now: start), 1.5))
        #expect(Self.about(bucket.delay(until: third, now: start), 2))
        // Asking again later counts the time that passed.
        #expect(Self.about(bucket.delay(until: third, now: start + .milliseconds(1500)), 0.5))
        #expect(bucket.delay(until: first, now: start + .milliseconds(1500)) == .zero)
    }

    @Test func manyReadersSharingOneBucketGetTheRateTogether() {
        var bucket = TokenBucket(rate: 3 << 20, now: start)
        // Three readers, each waiting for its own ticket; the next read comes when one is allowed.
        var due = [start, start, start]
        var allowed = 0
        while let next = due.indices.min(by: { due[$0] < due[$1] }), due[next] < start + .seconds(10) {
            let now = due[next]
            let ticket = bucket.reserve(64 << 10, now: now)
            due[next] = now + bucket.delay(until: ticket, now: now)
            allowed += 64 << 10
        }
        let end = due.max() ?? start
        #expect(abs(Self.rate(allowed, over: end - start) / Double(3 << 20) - 1) < 0.01)
    }

    // MARK: - Edges

    @Test func noLimitNeverWaits() {
        var bucket = TokenBucket(rate: nil, now: start)
        for size in [0, 1, 256 << 10, Int(Int32.max)] {
            #expect(bucket.take(size, now: start) == .zero)
        }
        #expect(bucket.capacity == 0)
        #expect(bucket.rate == nil)
    }

    @Test func tinyRatesWaitLongButFinitely() {
        var bucket = TokenBucket(rate: 1, now: start)
        #expect(Self.about(bucket.take(1, now: start), 1))
        #expect(Self.about(bucket.take(10, now: start), 11))
        var huge = TokenBucket(rate: 1, now: start)
        #expect(huge.take(.max, now: start) == .seconds(TokenBucket.longestWait))
    }

    @Test(arguments: [0, -5])
    func ratesBelowOneAreOneBytePerSecond(rate: Int) {
        var bucket = TokenBucket(rate: rate, now: start)
        #expect(bucket.rate == 1)
        #expect(Self.about(bucket.take(2, now: start), 2))
    }

    @Test func aClockThatSeemsToGoBackEarnsNothing() {
        var bucket = TokenBucket(rate: 1000, now: start + .seconds(5))
        #expect(Self.about(bucket.take(1000, now: start), 1))
        #expect(bucket.take(0, now: start + .seconds(6)) == .zero)
    }

    @Test func negativeCountsAreCountedAsNothing() {
        var bucket = TokenBucket(rate: 1000, now: start)
        #expect(bucket.take(-500, now: start) == .zero)
        #expect(Self.about(bucket.take(1000, now: start), 1))
    }
}
