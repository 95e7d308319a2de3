import Testing

@testable import SwoopKit

@Suite("SegmentPace: the bytes a connection has in flight")
struct SegmentPaceTests {
    static let start = ContinuousClock.now

    @Test(arguments: [
        // seconds since the segment was taken, bytes written since → bytes in flight (500 ms ahead)
        (0.0, 0, 0),
        (1.0, 0, 0),                      // nothing written: nothing expected
        (2.0, 20_000_000, 5_000_000),     // 10 MB/s: 5 MB in the next 500 ms
        (1.25, 1_000_000, 400_000),       // 0.8 MB/s
        (0.05, 1_000_000, 1_000_000),     // a first burst: never more than was written
        (0.0, 4_000_000, 4_000_000),
        (0.5, 3_000_000, 3_000_000),      // exactly the horizon
    ])
    func inFlightIsTheRateOverTheHorizon(seconds: Double, bytes: Int, expected: Int) {
        let pace = SegmentPace(at: Self.start, written: 1_000)
        let now = Self.start + .milliseconds(Int64(seconds * 1_000))
        #expect(pace.inFlight(written: 1_000 + bytes, at: now) == expected)
    }

    @Test func aCountBelowTheStartIsNothingInFlight() {
        let pace = SegmentPace(at: Self.start, written: 5_000)
        #expect(pace.inFlight(written: 4_000, at: Self.start + .seconds(1)) == 0)
    }
}
