import Foundation

/// The `Cache-Control` directives a private cache acts on (RFC 9111 §5.2), parsed leniently.
///
/// Names are case-insensitive, values may be tokens or quoted strings, and anything unknown or
/// malformed is skipped. `private`, `public`, `s-maxage` and the like are ignored: Swoop is a private
/// cache, so they allow nothing it does not already do.
struct CacheControl: Sendable, Hashable {
    /// `max-age` in seconds (the first one wins). A value that is not a non-negative integer is
    /// recorded as 0, which makes the response stale (RFC 9111 §4.2.1 allows treating bad freshness
    /// information as stale; serving stale bytes would be worse).
    var maxAge: Int?
    /// `no-cache`: use a stored response only after revalidating it. The qualified form
    /// (`no-cache="Set-Cookie"`) is treated like the plain one, which is the safe reading.
    var noCache = false
    /// `no-store`: never store the response (or, in a request, neither use nor store one).
    var noStore = false
    /// `must-revalidate`: parsed for completeness; Swoop never serves a stale response, so it changes
    /// nothing.
    var mustRevalidate = false

    /// The largest delta-seconds kept (RFC 9111 §1.2.2): bigger values mean "a very long time".
    static let maxDeltaSeconds = 2_147_483_648

    init(maxAge: Int? = nil, noCache: Bool = false, noStore: Bool = false, mustRevalidate: Bool = false) {
        self.maxAge = maxAge
        self.noCache = noCache
        self.noStore = noStore
        self.mustRevalidate = mustRevalidate
    }

    /// Parses a `Cache-Control` value (several field lines joined with commas); `nil` means none.
    init(_ value: String?) {
        guard let value else { return }
        for (name, argument) in Self.directives(value) {
            switch name {
            case "max-age" where maxAge == nil:
                maxAge = argument.flatMap(Self.deltaSeconds) ?? 0
            case "no-cache": noCache = true
            case "no-store": noStore = true
            case "must-revalidate": mustRevalidate = true
            default: break
            }
        }
    }

    /// `1*DIGIT`, saturating at ``maxDeltaSeconds``; `nil` for anything else.
    static func deltaSeconds(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return text.utf8.reduce(0) { min(maxDeltaSeconds, $0 * 10 + Int($1 - 0x30)) }
    }

    /// Splits a directive list at commas outside quoted strings into lower-cased names and unquoted
    /// arguments.
    static func directives(_ value: String) -> [(name: String, argument: String?)] {
        var result: [(name: String, argument: String?)] = []
        var current = ""
        var inQuotes = false
        var escaped = false
        for character in value + "," {
            if inQuotes {
                current.append(character)
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inQuotes = false }
            } else if character == "\"" {
                inQuotes = true
                current.append(character)
            } else if character == "," {
                if let directive = Self.directive(current) { result.append(directive) }
                current = ""
            } else {
                current.append(character)
            }
        }
        if inQuotes, let directive = Self.directive(current.dropLast().description) {
            result.append(directive)  // An unterminated quote runs to the end.
        }
        return result
    }

    private static func directive(_ element: String) -> (name: String, argument: String?)? {
        let parts = element.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let name = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
        guard !name.isEmpty else { return nil }
        guard parts.count == 2 else { return (name, nil) }
        return (name, unquote(parts[1].trimmingCharacters(in: .whitespaces)))
    }

    private static func unquote(_ text: String) -> String {
        guard text.hasPrefix("\"") else { return text }
        var result = ""
        var escaped = false
        for character in text.dropFirst() {
            if escaped {
                result.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                break
            } else {
                result.append(character)
            }
        }
        return result
    }
}

/// RFC 9111 freshness and revalidation for one stored `GET` response: how long it stays fresh, how
/// old it is, which validators to send. Pure: times come in as arguments, no clock and no I/O.
///
/// It is built from the response's cache-relevant header fields (``relevantHeaders(_:)``), which is
/// also what ``ResponseCache`` stores, so a `304` can update them field by field (RFC 9111 §4.3.4).
struct CachePolicy: Sendable, Hashable {
    /// What to do with a stored response for a new request.
    enum Lookup: Sendable, Hashable {
        /// Serve it without a request.
        case fresh
        /// Send a conditional request with these headers (maybe none: then it is a plain `GET`
        /// whose answer replaces the entry).
        case revalidate([Header])
    }

    /// A header field, comparable for tests.
    struct Header: Sendable, Hashable {
        var name: String
        var value: String
    }

    /// The header fields kept with a stored response (lower-case names).
    static let storedFields: Set<String> = ["cache-control", "expires", "date", "age", "etag", "last-modified", "vary"]
    /// A heuristic lifetime is this fraction of the time since `Last-Modified` (RFC 9111 §4.2.2)…
    static let heuristicFraction = 0.1
    /// …and at most a day.
    static let heuristicCap: TimeInterval = 86_400

    let cacheControl: CacheControl
    /// `Date`, or `nil` when absent or invalid (then the receipt time stands in, RFC 9110 §6.6.1).
    let date: Date?
    /// `Expires`; an invalid value (such as `0`) is a time in the past (RFC 9111 §5.3).
    let expires: Date?
    /// `Age` in seconds; an invalid value is ignored.
    let age: Int?
    /// The `ETag`, verbatim.
    let etag: String?
    /// The `Last-Modified` text, verbatim, when it is a valid HTTP date.
    let lastModified: String?
    /// `Vary`, verbatim.
    let vary: String?
    /// When the request was sent and the response head arrived.
    let requestTime: Date
    let responseTime: Date

    /// Reads the policy from stored header fields.
    ///
    /// - Parameters:
    ///   - headers: Lower-case field names to values, as ``relevantHeaders(_:)`` makes them.
    ///   - requestTime: When the request that got this response was sent.
    ///   - responseTime: When its head arrived.
    init(headers: [String: String], requestTime: Date, responseTime: Date) {
        cacheControl = CacheControl(headers["cache-control"])
        date = headers["date"].flatMap { HTTPDate.parse($0) }
        expires = headers["expires"].map { HTTPDate.parse($0) ?? .distantPast }
        age = headers["age"].flatMap { CacheControl.deltaSeconds($0.trimmingCharacters(in: .whitespaces)) }
        etag = headers["etag"].map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
        lastModified = headers["last-modified"].flatMap { HTTPDate.parse($0) == nil ? nil : $0 }
        vary = headers["vary"]
        self.requestTime = requestTime
        self.responseTime = responseTime
    }

    /// The cache-relevant fields of a response: lower-case names, repeated fields joined by `", "`.
    static func relevantHeaders(_ headers: [(name: String, value: String)]) -> [String: String] {
        var result: [String: String] = [:]
        for header in headers {
            let name = header.name.lowercased()
            guard storedFields.contains(name) else { continue }
            result[name] = result[name].map { $0 + ", " + header.value } ?? header.value
        }
        return result
    }

    /// Stored fields updated by a `304`'s: a field the `304` carries replaces the stored one.
    static func merge(stored: [String: String], notModified: [String: String]) -> [String: String] {
        stored.merging(notModified) { _, new in new }
    }

    // MARK: - Freshness (RFC 9111 §4.2)

    /// How long the response is fresh after it was generated: `max-age`, else `Expires − Date`, else
    /// 10% of `Date − Last-Modified` capped at a day, else 0.
    var freshnessLifetime: TimeInterval {
        if let maxAge = cacheControl.maxAge { return TimeInterval(maxAge) }
        let generated = date ?? responseTime
        if let expires { return max(0, expires.timeIntervalSince(generated)) }
        if let lastModified, let modified = HTTPDate.parse(lastModified) {
            return min(max(0, generated.timeIntervalSince(modified)) * Self.heuristicFraction, Self.heuristicCap)
        }
        return 0
    }

    /// The response's age at `now` (RFC 9111 §4.2.3). A clock that went backwards counts as no time.
    func currentAge(now: Date) -> TimeInterval {
        let apparentAge = max(0, responseTime.timeIntervalSince(date ?? responseTime))
        let responseDelay = max(0, responseTime.timeIntervalSince(requestTime))
        let correctedAgeValue = TimeInterval(age ?? 0) + responseDelay
        let correctedInitialAge = max(apparentAge, correctedAgeValue)
        let residentTime = max(0, now.timeIntervalSince(responseTime))
        return correctedInitialAge + residentTime
    }

    /// Whether the response may be served at `now` without asking the server. `no-cache` never is.
    func isFresh(now: Date) -> Bool {
        !cacheControl.noCache && freshnessLifetime > currentAge(now: now)
    }

    /// The validators for a conditional request: `If-None-Match` from the ETag and `If-Modified-Since`
    /// from Last-Modified (a server that knows both uses `If-None-Match`, RFC 9110 §13.2.2).
    var conditionalHeaders: [Header] {
        var headers: [Header] = []
        if let etag { headers.append(Header(name: "If-None-Match", value: etag)) }
        if let lastModified { headers.append(Header(name: "If-Modified-Since", value: lastModified)) }
        return headers
    }

    /// Whether a stored response can be served for a request with `request` directives at `now`, or
    /// must be revalidated. A request's `no-cache`, or a `max-age` below the current age, forces
    /// revalidation.
    func lookup(request: CacheControl, now: Date) -> Lookup {
        let age = currentAge(now: now)
        let requestAllows = !request.noCache && request.maxAge.map { TimeInterval($0) >= age } ?? true
        return requestAllows && isFresh(now: now) ? .fresh : .revalidate(conditionalHeaders)
    }

    // MARK: - Storing (RFC 9111 §3)

    /// Whether a response may be stored: a `200` without `no-store` (in the request or the response)
    /// whose `Vary`, if any, names only `Accept-Encoding` (which Swoop always sends as `identity`).
    /// Other `Vary` values would need the request headers in the key; such responses are not stored.
    static func isStorable(status: Int, response: [String: String], request: CacheControl) -> Bool {
        guard status == 200, !request.noStore, !CacheControl(response["cache-control"]).noStore else { return false }
        guard let vary = response["vary"] else { return true }
        return vary.split(separator: ",").allSatisfy {
            let field = $0.trimmingCharacters(in: .whitespaces).lowercased()
            return field.isEmpty || field == "accept-encoding"
        }
    }
}
