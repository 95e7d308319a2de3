import Foundation
import Testing

@testable import SwoopKit

@Suite("Resume decisions")
struct ResumeDecisionTests {
    static let saved = SavedRepresentation(offset: 100, totalBytes: 1000, etag: "\"v1\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")

    @Test func freshRequestSendsNoRange() {
        let fresh = SavedRepresentation(offset: 0)
        #expect(ResumeDecision.rangeHeaders(for: fresh)?.isEmpty == true)
    }

    @Test func strongETagIsTheIfRangeValidator() throws {
        let headers = try #require(ResumeDecision.rangeHeaders(for: Self.saved))
        #expect(headers.map(\.name) == ["Range", "If-Range"])
        #expect(headers.map(\.value) == ["bytes=100-", "\"v1\""])
    }

    @Test func weakETagFallsBackToLastModified() throws {
        var saved = Self.saved
        saved.etag = "W/\"v1\""
        let headers = try #require(ResumeDecision.rangeHeaders(for: saved))
        #expect(headers.map(\.value) == ["bytes=100-", "Sun, 06 Nov 1994 08:49:37 GMT"])
    }

    @Test func lengthOnlyResumeSendsRangeWithoutIfRange() throws {
        let saved = SavedRepresentation(offset: 100, totalBytes: 1000)
        let headers = try #require(ResumeDecision.rangeHeaders(for: saved))
        #expect(headers.map(\.name) == ["Range"])
    }

    @Test func nothingToValidateMeansNoResume() {
        #expect(ResumeDecision.rangeHeaders(for: SavedRepresentation(offset: 100)) == nil)
    }

    @Test func matchingPartialResponseAppends() {
        let head = ResponseHead(status: 206, etag: "\"v1\"", contentLength: 900, contentRange: "bytes 100-999/1000")
        #expect(ResumeDecision.decide(head, saved: Self.saved) == .write(offset: 100, totalBytes: 1000, restartReason: nil))
    }

    @Test func fullResponseToFreshRequestWritesFromZero() {
        let head = ResponseHead(status: 200, etag: "\"v1\"", contentLength: 1000)
        #expect(ResumeDecision.decide(head, saved: SavedRepresentation(offset: 0)) == .write(offset: 0, totalBytes: 1000, restartReason: nil))
    }

    @Test func fullResponseToRangeRequestRestartsAndSaysWhy() {
        let ignored = ResponseHead(status: 200, etag: "\"v1\"", contentLength: 1000)
        #expect(ResumeDecision.decide(ignored, saved: Self.saved) == .write(offset: 0, totalBytes: 1000, restartReason: "the server ignored the range request"))
        let changed = ResponseHead(status: 200, etag: "\"v2\"", contentLength: 1000)
        guard case .write(0, 1000, let reason?) = ResumeDecision.decide(changed, saved: Self.saved) else {
            Issue.record("expected a restart")
            return
        }
        #expect(reason.contains("ETag \"v1\" → \"v2\""))
    }

    @Test(arguments: [
        ResponseHead(status: 206, etag: "\"v1\"", contentRange: "bytes 50-999/1000"),  // wrong start
        ResponseHead(status: 206, etag: "\"v1\"", contentRange: "bytes 100-1999/2000"),  // wrong total
        ResponseHead(status: 206, etag: "\"v2\"", contentRange: "bytes 100-999/1000"),  // changed ETag
        ResponseHead(status: 206, etag: "\"v1\"", lastModified: "Mon, 07 Nov 1994 08:49:37 GMT", contentRange: "bytes 100-999/1000"),
        ResponseHead(status: 206, etag: "\"v1\""),  // no Content-Range
        ResponseHead(status: 206, etag: "\"v1\"", contentRange: "garbage"),
        ResponseHead(status: 206, etag: "\"v1\"", contentLength: 5, contentRange: "bytes 100-999/1000"),  // length mismatch
    ])
    func suspiciousPartialResponsesRestart(head: ResponseHead) {
        guard case .restart = ResumeDecision.decide(head, saved: Self.saved) else {
            Issue.record("expected restart for \(head)")
            return
        }
    }

    @Test func unsatisfiableRangeAtFullLengthMeansComplete() {
        let saved = SavedRepresentation(offset: 1000, totalBytes: 1000, etag: "\"v1\"")
        #expect(ResumeDecision.decide(ResponseHead(status: 416, contentRange: "bytes */1000"), saved: saved) == .complete)
        guard case .restart = ResumeDecision.decide(ResponseHead(status: 416, contentRange: "bytes */500"), saved: saved) else {
            Issue.record("a shrunk file must restart")
            return
        }
        guard case .restart = ResumeDecision.decide(ResponseHead(status: 416), saved: saved) else {
            Issue.record("416 without Content-Range must restart")
            return
        }
    }

    @Test func unsatisfiableRangeWithoutARangeRequestIsAnErrorStatus() {
        let head = ResponseHead(status: 416, contentRange: "bytes */0")
        #expect(ResumeDecision.decide(head, saved: SavedRepresentation(offset: 0)) == .status(416))
    }

    @Test(arguments: [404, 403, 500, 503, 429, 408])
    func errorStatusesAreReported(status: Int) {
        #expect(ResumeDecision.decide(ResponseHead(status: status), saved: Self.saved) == .status(status))
    }
}

@Suite("Redirects")
struct RedirectTrackerTests {
    let start = URL(string: "https://a.example/file")!

    @Test func relativeLocationResolvesAgainstCurrent() throws {
        var tracker = RedirectTracker(original: start, policy: .init())
        #expect(try tracker.follow(status: 302, location: "/other").absoluteString == "https://a.example/other")
        #expect(try tracker.follow(status: 301, location: "next").absoluteString == "https://a.example/next")
    }

    @Test func loopIsDetected() throws {
        var tracker = RedirectTracker(original: start, policy: .init())
        _ = try tracker.follow(status: 302, location: "/b")
        #expect(throws: SwoopError.self) { try tracker.follow(status: 302, location: "/file") }
    }

    @Test func limitIsEnforced() throws {
        var policy = Configuration.Redirects()
        policy.maxRedirects = 2
        var tracker = RedirectTracker(original: start, policy: policy)
        _ = try tracker.follow(status: 302, location: "/1")
        _ = try tracker.follow(status: 302, location: "/2")
        let error = #expect(throws: SwoopError.self) { try tracker.follow(status: 302, location: "/3") }
        #expect(error?.message.contains("too many redirects") == true)
    }

    @Test func downgradeIsRefusedUnlessAllowed() throws {
        var tracker = RedirectTracker(original: start, policy: .init())
        let error = #expect(throws: SwoopError.self) { try tracker.follow(status: 302, location: "http://a.example/file") }
        #expect(error?.code == .redirect)
        var policy = Configuration.Redirects()
        policy.allowInsecureDowngrade = true
        var allowed = RedirectTracker(original: start, policy: policy)
        #expect(try allowed.follow(status: 302, location: "http://a.example/file").scheme == "http")
    }

    @Test func missingOrForeignLocationFails() {
        var tracker = RedirectTracker(original: start, policy: .init())
        #expect(throws: SwoopError.self) { try tracker.follow(status: 302, location: nil) }
        #expect(throws: SwoopError.self) { try tracker.follow(status: 302, location: "ftp://a.example/x") }
    }

    @Test func credentialsStayWithTheirOrigin() throws {
        let headers: [(name: String, value: String)] = [
            ("Authorization", "Bearer x"), ("cookie", "a=b"), ("Proxy-Authorization", "p"), ("X-Other", "1"),
        ]
        var tracker = RedirectTracker(original: start, policy: .init())
        _ = try tracker.follow(status: 302, location: "/same-origin")
        #expect(tracker.headers(headers).count == 4)
        _ = try tracker.follow(status: 302, location: "https://b.example/x")
        #expect(tracker.headers(headers).map(\.name) == ["X-Other"])
        _ = try tracker.follow(status: 302, location: "https://a.example:8443/x")
        #expect(tracker.headers(headers).map(\.name) == ["X-Other"])
    }
}

@Suite("Backoff")
struct BackoffTests {
    @Test func delaysDoubleWithinJitterBounds() {
        var policy = Configuration.Retry()
        policy.baseDelay = .seconds(1)
        policy.maxDelay = .seconds(8)
        let backoff = Backoff(policy: policy)
        #expect(backoff.delay(beforeRetry: 1, retryAfter: nil, jitter: 0) == .milliseconds(500))
        #expect(backoff.delay(beforeRetry: 1, retryAfter: nil, jitter: 1) == .seconds(1))
        #expect(backoff.delay(beforeRetry: 3, retryAfter: nil, jitter: 1) == .seconds(4))
        #expect(backoff.delay(beforeRetry: 10, retryAfter: nil, jitter: 1) == .seconds(8))
        #expect(backoff.delay(beforeRetry: 100, retryAfter: nil, jitter: 0) == .seconds(4))
    }

    @Test func retryAfterIsHonouredAndCapped() {
        var policy = Configuration.Retry()
        policy.baseDelay = .milliseconds(100)
        policy.maxRetryAfter = .seconds(60)
        let backoff = Backoff(policy: policy)
        #expect(backoff.delay(beforeRetry: 1, retryAfter: .seconds(7), jitter: 0) == .seconds(7))
        #expect(backoff.delay(beforeRetry: 1, retryAfter: .seconds(3600), jitter: 0) == .seconds(60))
    }
}
