import Foundation
import Testing

@testable import SwoopKit

/// The pure freshness rules: every row is one header combination and its expected outcome.
@Suite("CachePolicy")
struct CachePolicyTests {
    // MARK: - Cache-Control parsing

    struct ControlCase: Sendable, CustomTestStringConvertible {
        var value: String?
        var expected: CacheControl
        var testDescription: String { value.map { "'\($0)'" } ?? "none" }
    }

    static let controlCases: [ControlCase] = [
        ControlCase(value: nil, expected: CacheControl()),
        ControlCase(value: "", expected: CacheControl()),
        ControlCase(value: "max-age=60", expected: CacheControl(maxAge: 60)),
        ControlCase(value: "MAX-AGE=60", expected: CacheControl(maxAge: 60)),
        ControlCase(value: "  max-age = 60 ", expected: CacheControl(maxAge: 60)),
        ControlCase(value: "max-age=\"60\"", expected: CacheControl(maxAge: 60)),
        ControlCase(value: "max-age=0", expected: CacheControl(maxAge: 0)),
        ControlCase(value: "max-age=abc", expected: CacheControl(maxAge: 0)),
        ControlCase(value: "max-age=-5", expected: CacheControl(maxAge: 0)),
        ControlCase(value: "max-age=1.5", expected: CacheControl(maxAge: 0)),
        ControlCase(value: "max-age", expected: CacheControl(maxAge: 0)),
        ControlCase(value: "max-age=99999999999999999999999", expected: CacheControl(maxAge: CacheControl.maxDeltaSeconds)),
        ControlCase(value: "max-age=10, max-age=20", expected: CacheControl(maxAge: 10)),
        ControlCase(value: "no-cache", expected: CacheControl(noCache: true)),
        ControlCase(value: "No-Cache", expected: CacheControl(noCache: true)),
        ControlCase(value: "no-cache=\"Set-Cookie, X-Foo\", max-age=5", expected: CacheControl(maxAge: 5, noCache: true)),
        ControlCase(value: "no-store", expected: CacheControl(noStore: true)),
        ControlCase(value: "must-revalidate, max-age=3", expected: CacheControl(maxAge: 3, mustRevalidate: true)),
        ControlCase(value: "private, max-age=30", expected: CacheControl(maxAge: 30)),
        ControlCase(value: "public, s-maxage=600, immutable", expected: CacheControl()),
        ControlCase(value: "private=\"a,max-age=9\", no-store", expected: CacheControl(noStore: true)),
        ControlCase(value: ",,, =5, max-age=7,", expected: CacheControl(maxAge: 7)),
        ControlCase(value: "ext=\"unterminated, no-cache", expected: CacheControl()),
        ControlCase(value: "ext=\"a\\\"b\", no-cache", expected: CacheControl(noCache: true)),
        ControlCase(value: "garbage;;;", expected: CacheControl()),
    ]

    @Test(arguments: controlCases)
    func parsesCacheControl(_ row: ControlCase) {
        #expect(CacheControl(row.value) == row.expected)
    }

    // MARK: - Freshness lifetime and age

    static let received = Date(timeIntervalSince1970: 1_700_000_000)
    static func http(_ offset: TimeInterval) -> String { HTTPDate.format(received.addingTimeInterval(offset)) }

    struct FreshnessCase: Sendable, CustomTestStringConvertible {
        var name: String
        var headers: [String: String]
        var lifetime: TimeInterval
        /// The current age right when the response arrived (request sent 0 s before).
        var initialAge: TimeInterval = 0
        var testDescription: String { name }
    }

    static let freshnessCases: [FreshnessCase] = [
        FreshnessCase(name: "nothing", headers: [:], lifetime: 0),
        FreshnessCase(name: "max-age", headers: ["cache-control": "max-age=60"], lifetime: 60),
        FreshnessCase(
            name: "max-age beats Expires", headers: ["cache-control": "max-age=60", "date": http(0), "expires": http(3600)],
            lifetime: 60
        ),
        FreshnessCase(name: "Expires − Date", headers: ["date": http(0), "expires": http(120)], lifetime: 120),
        FreshnessCase(name: "Expires without Date uses receipt", headers: ["expires": http(90)], lifetime: 90),
        FreshnessCase(name: "Expires before Date", headers: ["date": http(0), "expires": http(-10)], lifetime: 0),
        FreshnessCase(name: "Expires: 0 is the past", headers: ["expires": "0", "last-modified": http(-86_400)], lifetime: 0),
        FreshnessCase(
            name: "heuristic 10% of Date − Last-Modified", headers: ["date": http(0), "last-modified": http(-1000)], lifetime: 100
        ),
        FreshnessCase(name: "heuristic capped at a day", headers: ["date": http(0), "last-modified": http(-86_400 * 365)], lifetime: 86_400),
        FreshnessCase(name: "heuristic with Last-Modified in the future", headers: ["date": http(0), "last-modified": http(500)], lifetime: 0),
        FreshnessCase(name: "invalid Last-Modified: no heuristic", headers: ["date": http(0), "last-modified": "yesterday"], lifetime: 0),
        FreshnessCase(
            name: "Expires present: no heuristic", headers: ["date": http(0), "expires": http(5), "last-modified": http(-100_000)],
            lifetime: 5
        ),
        FreshnessCase(name: "Age counts", headers: ["cache-control": "max-age=60", "age": "50"], lifetime: 60, initialAge: 50),
        FreshnessCase(name: "invalid Age ignored", headers: ["cache-control": "max-age=60", "age": "ten"], lifetime: 60),
        FreshnessCase(
            name: "apparent age from an old Date", headers: ["cache-control": "max-age=60", "date": http(-30)], lifetime: 60,
            initialAge: 30
        ),
        FreshnessCase(
            name: "Date in the future: no negative age", headers: ["cache-control": "max-age=60", "date": http(300)], lifetime: 60
        ),
        FreshnessCase(
            name: "larger of apparent age and Age", headers: ["cache-control": "max-age=60", "date": http(-30), "age": "10"],
            lifetime: 60, initialAge: 30
        ),
    ]

    @Test(arguments: freshnessCases)
    func freshnessLifetimeAndAge(_ row: FreshnessCase) {
        let policy = CachePolicy(headers: row.headers, requestTime: Self.received, responseTime: Self.received)
        #expect(policy.freshnessLifetime == row.lifetime)
        #expect(policy.currentAge(now: Self.received) == row.initialAge)
        #expect(policy.currentAge(now: Self.received.addingTimeInterval(7)) == row.initialAge + 7)
        // Fresh exactly while age < lifetime.
        #expect(policy.isFresh(now: Self.received) == (row.lifetime > row.initialAge))
        let lastFreshMoment = Self.received.addingTimeInterval(row.lifetime - row.initialAge - 1)
        #expect(policy.isFresh(now: lastFreshMoment) == (row.lifetime - row.initialAge >= 1))
        #expect(!policy.isFresh(now: Self.received.addingTimeInterval(row.lifetime - row.initialAge)))
    }

    @Test func responseDelayAddsToAge() {
        let policy = CachePolicy(
            headers: ["cache-control": "max-age=60", "age": "5"], requestTime: Self.received.addingTimeInterval(-3),
            responseTime: Self.received
        )
        #expect(policy.currentAge(now: Self.received) == 8)
    }

    @Test func clockGoingBackwardsAddsNoAge() {
        let policy = CachePolicy(headers: ["cache-control": "max-age=60"], requestTime: Self.received, responseTime: Self.received)
        #expect(policy.currentAge(now: Self.received.addingTimeInterval(-1000)) == 0)
        #expect(policy.isFresh(now: Self.received.addingTimeInterval(-1000)))
    }

    // MARK: - Lookup: serve or revalidate, with which validators

    struct LookupCase: Sendable, CustomTestStringConvertible {
        var name: String
        var headers: [String: String]
        var request: String? = nil
        var after: TimeInterval = 1
        var expected: CachePolicy.Lookup
        var testDescription: String { name }
    }

    static let etag = CachePolicy.Header(name: "If-None-Match", value: "\"v1\"")
    static let since = CachePolicy.Header(name: "If-Modified-Since", value: http(-1000))

    static let lookupCases: [LookupCase] = [
        LookupCase(name: "fresh by max-age", headers: ["cache-control": "max-age=60", "etag": "\"v1\""], expected: .fresh),
        LookupCase(name: "stale with ETag", headers: ["cache-control": "max-age=60", "etag": "\"v1\""], after: 61, expected: .revalidate([etag])),
        LookupCase(name: "no-cache with ETag", headers: ["cache-control": "no-cache, max-age=600", "etag": "\"v1\""], expected: .revalidate([etag])),
        LookupCase(name: "stale with Last-Modified only", headers: ["last-modified": http(-1000), "date": http(0)], after: 101, expected: .revalidate([since])),
        LookupCase(name: "heuristic fresh", headers: ["last-modified": http(-1000), "date": http(0)], after: 50, expected: .fresh),
        LookupCase(
            name: "both validators", headers: ["etag": "\"v1\"", "last-modified": http(-1000), "cache-control": "no-cache"],
            expected: .revalidate([etag, since])
        ),
        LookupCase(name: "no validators", headers: ["cache-control": "max-age=0"], expected: .revalidate([])),
        LookupCase(name: "weak ETag sent as is", headers: ["etag": "W/\"x\""], expected: .revalidate([.init(name: "If-None-Match", value: "W/\"x\"")])),
        LookupCase(name: "invalid Last-Modified not sent", headers: ["last-modified": "soon"], expected: .revalidate([])),
        LookupCase(name: "must-revalidate while fresh", headers: ["cache-control": "max-age=60, must-revalidate"], expected: .fresh),
        LookupCase(name: "request no-cache", headers: ["cache-control": "max-age=60", "etag": "\"v1\""], request: "no-cache", expected: .revalidate([etag])),
        LookupCase(name: "request max-age=0", headers: ["cache-control": "max-age=60"], request: "max-age=0", expected: .revalidate([])),
        LookupCase(name: "request max-age above age", headers: ["cache-control": "max-age=60"], request: "max-age=30", after: 10, expected: .fresh),
    ]

    @Test(arguments: lookupCases)
    func lookup(_ row: LookupCase) {
        let policy = CachePolicy(headers: row.headers, requestTime: Self.received, responseTime: Self.received)
        #expect(policy.lookup(request: CacheControl(row.request), now: Self.received.addingTimeInterval(row.after)) == row.expected)
    }

    // MARK: - Storing

    struct StorableCase: Sendable, CustomTestStringConvertible {
        var status: Int
        var headers: [String: String] = [:]
        var request: String? = nil
        var storable: Bool
        var testDescription: String { "\(status) \(headers) request: \(request ?? "-")" }
    }

    static let storableCases: [StorableCase] = [
        StorableCase(status: 200, storable: true),
        StorableCase(status: 200, headers: ["cache-control": "max-age=60"], storable: true),
        StorableCase(status: 200, headers: ["cache-control": "private, no-cache"], storable: true),
        StorableCase(status: 200, headers: ["cache-control": "no-store"], storable: false),
        StorableCase(status: 200, headers: ["cache-control": "max-age=60, NO-STORE"], storable: false),
        StorableCase(status: 200, request: "no-store", storable: false),
        StorableCase(status: 200, headers: ["vary": "Accept-Encoding"], storable: true),
        StorableCase(status: 200, headers: ["vary": "accept-encoding, Cookie"], storable: false),
        StorableCase(status: 200, headers: ["vary": "*"], storable: false),
        StorableCase(status: 203, storable: false),
        StorableCase(status: 204, storable: false),
        StorableCase(status: 206, storable: false),
        StorableCase(status: 304, storable: false),
        StorableCase(status: 404, headers: ["cache-control": "max-age=60"], storable: false),
    ]

    @Test(arguments: storableCases)
    func storable(_ row: StorableCase) {
        #expect(CachePolicy.isStorable(status: row.status, response: row.headers, request: CacheControl(row.request)) == row.storable)
    }

    // MARK: - Header bookkeeping

    @Test func relevantHeadersKeepsCacheFieldsAndJoinsRepeats() {
        let fields = CachePolicy.relevantHeaders([
            ("Cache-Control", "max-age=5"), ("Content-Type", "text/plain"), ("cache-control", "no-cache"), ("ETag", "\"a\""),
        ])
        #expect(fields == ["cache-control": "max-age=5, no-cache", "etag": "\"a\""])
    }

    @Test func notModifiedFieldsReplaceStoredOnes() {
        let merged = CachePolicy.merge(
            stored: ["etag": "\"a\"", "cache-control": "max-age=5", "last-modified": "x"],
            notModified: ["cache-control": "max-age=600", "date": "d"]
        )
        #expect(merged == ["etag": "\"a\"", "cache-control": "max-age=600", "last-modified": "x", "date": "d"])
    }
}
