import Foundation

/// The tests that take this machine's two cores for seconds at a time (Chromium, private
/// PostgreSQL clusters, fleets of daemons, a gigabyte through loopback): beside the rest of the
/// suite they starve its timing-bound tests. `swift test` runs everything; `scripts/test` (the
/// README's test command, which CI's `.ci/run` runs) runs the suite with `SWOOP_TEST_HEAVY=skip`,
/// then the heavy suites alone, one test at a time (its `heavy` list names them).
public enum TestPhase {
    /// Whether a heavy suite runs in this test process (a suite's `.enabled(if:)`).
    public static var runsHeavy: Bool { ProcessInfo.processInfo.environment["SWOOP_TEST_HEAVY"] != "skip" }
}
