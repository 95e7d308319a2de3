import Foundation
import NIOCore
import SwoopTesting
import Testing

@testable import SwoopKit

/// `Retries`: only getting further resets the count; a refused connection or an unknown host gives
/// up early; the notice says how long it waits.
@Suite("Retries")
struct RetriesTests {
    static let transient = SwoopError(.timeout, "no data from http://h/f for 1s", isRetryable: true)
    static let refused = SwoopError(
        .network, "cannot connect to http://h/f: Connection refused", cause: IOError(errnoCode: ECONNREFUSED, reason: "connect"),
        isRetryable: true
    )

    static func policy(maxRetries: Int) -> Configuration.Retry {
        var policy = Configuration.Retry()
        policy.maxRetries = maxRetries
        return policy
    }

    @Test func attemptsThatGetNoFurtherUseUpTheRetries() {
        var retries = Retries(policy: Self.policy(maxRetries: 3))
        for attempt in 1...3 {
            #expect(retries.decide(after: Self.transient, progressed: false, jitter: 0) != .giveUp, "retry \(attempt)")
        }
        #expect(retries.decide(after: Self.transient, progressed: false, jitter: 0) == .giveUp)
    }

    @Test func gettingFurtherStartsTheCountAgain() {
        var retries = Retries(policy: Self.policy(maxRetries: 2))
        _ = retries.decide(after: Self.transient, progressed: false, jitter: 0)
        _ = retries.decide(after: Self.transient, progressed: false, jitter: 0)
        guard case .retry(_, let attempt, _) = retries.decide(after: Self.transient, progressed: true, jitter: 0) else {
            Issue.record("an attempt that got further is retried")
            return
        }
        #expect(attempt == 1)
    }

    @Test func anUnreachableServerIsRetriedAtMostTwice() {
        var retries = Retries(policy: Self.policy(maxRetries: 5))
        #expect(retries.decide(after: Self.refused, progressed: false, jitter: 0) != .giveUp)
        #expect(retries.decide(after: Self.refused, progressed: false, jitter: 0) != .giveUp)
        #expect(retries.decide(after: Self.refused, progressed: false, jitter: 0) == .giveUp)
        var fewer = Retries(policy: Self.policy(maxRetries: 1))
        #expect(fewer.decide(after: Self.refused, progressed: false, jitter: 0) != .giveUp)
        #expect(fewer.decide(after: Self.refused, progressed: false, jitter: 0) == .giveUp)
    }

    @Test(arguments: [
        ("cannot connect to http://h/f: Connection refused", "Connection refused"),
        ("HTTP 503 Service Unavailable from http://h/f", "HTTP 503 Service Unavailable"),
        ("connection to http://h/f closed early", "connection to http://h/f closed early"),
        ("no data for 1s", "no data for 1s"),
    ])
    func aRetryReasonLeavesOutTheURL(message: String, reason: String) {
        #expect(Transfer.shortReason(message, url: "http://h/f") == reason)
    }

    @Test func anErrorNotWorthRetryingGivesUpAtOnce() {
        var retries = Retries(policy: Self.policy(maxRetries: 5))
        #expect(retries.decide(after: SwoopError(.httpStatus, "HTTP 404", status: 404), progressed: true, jitter: 0) == .giveUp)
    }

    @Test(arguments: [(0.0, "0s"), (0.5, "0.5s"), (0.25, "0.3s"), (0.04, "0s"), (1.0, "1s"), (2.34, "2.3s"), (9.96, "10s"), (75, "1m15s")])
    func delaysShowTenthsOfASecond(seconds: Double, text: String) {
        #expect(ByteFormatting.delay(seconds) == text)
    }

    /// A server without ranges that stalls at the same point every time: each retry starts over
    /// from 0 and gets no further, so the download fails after its retries instead of looping.
    @Test(.timeLimit(.minutes(1)))
    func aServerThatStallsAtTheSamePointWithoutRangesEndsAfterTheRetries() async throws {
        var f = try await Fixture.make()
        defer { f.stop() }
        f.configuration.retry.maxRetries = 2
        // Long enough for the 100,000 bytes to arrive before it on a loaded machine (the browser tests'
        // Chromium runs beside this one): each attempt then reaches exactly the stall point.
        f.configuration.timeouts.idle = .seconds(2)
        f.server.serve("/same.bin", Resource(body: Resource.random(size: 400_000, seed: 3), acceptRanges: false))
        f.server.setDefault("/same.bin", .stallAfter(bytes: 100_000))
        let (result, events) = await f.download(try f.request("/same.bin"))
        guard case .failure(let error) = result else {
            Issue.record("should fail, got \(result)")
            return
        }
        #expect(error.code == .timeout)
        // Two retries after the first attempt. On a loaded machine one attempt may time out short of
        // the stall point; the next then gets further, which earns the budget back once (seen with
        // Chromium beside this test): one more request, never an endless loop.
        let requests = f.server.requests(to: "/same.bin").count
        #expect((3...4).contains(requests))
        #expect(events.filter { if case .notice(_, let text) = $0 { text.contains("retrying in") } else { false } }.count == requests - 1)
        #expect(events.last.map { if case .failed = $0 { true } else { false } } == true)
    }

    /// A refused connection is retried twice, whatever `--retries` says, and the notice gives the
    /// real delay ("0.3s", not "0s").
    @Test func aRefusedConnectionIsRetriedTwiceWithTheDelayInTenths() async throws {
        var f = try await Fixture.make()
        defer { f.stop() }
        f.configuration.retry.maxRetries = 5
        f.configuration.retry.baseDelay = .milliseconds(500)
        f.configuration.retry.maxDelay = .seconds(2)
        let refusing = try TestPort(listening: false)
        let (result, events) = await f.download(try DownloadRequest(url: refusing.url("/r.bin"), directory: f.directory))
        withExtendedLifetime(refusing) {}
        guard case .failure(let error) = result else {
            Issue.record("should fail")
            return
        }
        #expect(error.code == .network)
        let notices = events.compactMap { if case .notice(_, let text) = $0 { text } else { nil } }
        #expect(notices.count == 2)
        // The notice's snapshot says which retry and why, for the board's line.
        let retries = events.compactMap { if case .notice(let download, _) = $0 { download.retry } else { nil } }
        #expect(retries.map(\.attempt) == [1, 2])
        // The reason leaves out the URL the board's line names already.
        #expect(retries.allSatisfy { $0.maxRetries == 2 && ($0.reason == "Connection refused" || $0.reason == "connection refused") })
        // It says how many retries there will be: two, not --retries' five.
        #expect(notices.first?.range(of: #"retrying in 0\.[345]s \(1/2\)$"#, options: .regularExpression) != nil, "\(notices)")
    }
}
