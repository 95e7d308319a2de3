import Foundation

/// Cookies from a Netscape/Mozilla `cookies.txt` file (the format curl's `-b FILE`, wget's and aria2's
/// `--load-cookies` read), and which of them a request sends (RFC 6265 §5.4).
///
/// A line has seven tab-separated fields: domain, include-subdomains (`TRUE`/`FALSE`), path, secure
/// (`TRUE`/`FALSE`), expiry (Unix seconds, `0` for a session cookie), name, value. A line of six fields
/// is a cookie with an empty value. `#HttpOnly_` before the domain marks an HttpOnly cookie (sent like
/// any other); other lines starting with `#` and blank lines are skipped, as are CRLF endings and one
/// trailing tab. A leading dot on the domain is ignored: the flag alone says whether subdomains match,
/// as in curl. Malformed lines are skipped, as curl and aria2 skip them, and their numbers are kept in
/// ``skippedLines`` so that a caller can warn. A later line for the same domain, path and name replaces
/// an earlier one.
public struct CookieJar: Sendable, Hashable {
    /// One cookie as the file gives it.
    public struct Cookie: Sendable, Hashable {
        /// The domain, lowercased, without a leading dot.
        public var domain: String
        /// Whether hosts below ``domain`` get the cookie too (`FALSE`: only the host itself).
        public var includeSubdomains: Bool
        /// The path the cookie is scoped to; requests to it and below it get the cookie.
        public var path: String
        /// Whether the cookie is sent only over https.
        public var secure: Bool
        /// When the cookie expires, or `nil` for a session cookie (expiry `0`), which never does here.
        public var expires: Date?
        /// The cookie's name.
        public var name: String
        /// The cookie's value, as written.
        public var value: String
        /// Whether the line had the `#HttpOnly_` prefix. It changes nothing for a downloader.
        public var httpOnly: Bool

        /// Creates a cookie.
        ///
        /// - Parameters:
        ///   - domain: The domain; a leading dot is dropped and it is lowercased.
        ///   - includeSubdomains: Whether hosts below `domain` get it too.
        ///   - path: The path scope; empty means `/`.
        ///   - secure: Whether it is sent only over https.
        ///   - expires: The expiry, or `nil` for a session cookie.
        ///   - name: The name.
        ///   - value: The value.
        ///   - httpOnly: Whether the file marked it `#HttpOnly_`.
        public init(
            domain: String, includeSubdomains: Bool, path: String = "/", secure: Bool = false, expires: Date? = nil,
            name: String, value: String, httpOnly: Bool = false
        ) {
            let lowered = domain.lowercased()
            self.domain = lowered.hasPrefix(".") ? String(lowered.dropFirst()) : lowered
            self.includeSubdomains = includeSubdomains
            self.path = path.isEmpty ? "/" : path
            self.secure = secure
            self.expires = expires
            self.name = name
            self.value = value
            self.httpOnly = httpOnly
        }

        /// Whether a request to `url` at `now` sends this cookie: domain, path, scheme and expiry rules.
        ///
        /// - Parameters:
        ///   - url: The request URL (one hop of a redirect chain).
        ///   - now: The current time; a cookie whose expiry is not after it is not sent.
        /// - Returns: `true` when the cookie belongs in the request's `Cookie` header.
        public func matches(_ url: URL, now: Date) -> Bool {
            guard let host = url.host.map(CookieJar.normalizedHost) else { return false }
            if let expires, expires <= now { return false }
            if secure && url.scheme?.lowercased() != "https" { return false }
            return domainMatches(host) && CookieJar.pathMatches(path, requestPath: CookieJar.requestPath(url))
        }

        private func domainMatches(_ host: String) -> Bool {
            let domain = CookieJar.normalizedHost(self.domain)
            if host == domain { return true }
            // RFC 6265 §5.1.3: a subdomain match needs a name, never an IP address.
            guard includeSubdomains, !CookieJar.isIPAddress(host) else { return false }
            return host.hasSuffix("." + domain)
        }
    }

    /// The cookies in file order (a replaced cookie keeps its first position).
    public private(set) var cookies: [Cookie]
    /// The 1-based numbers of the lines that were skipped as malformed.
    public private(set) var skippedLines: [Int]

    /// Creates a jar holding these cookies.
    ///
    /// - Parameter cookies: The cookies, in the order a file would list them.
    public init(cookies: [Cookie] = []) {
        self.cookies = []
        self.skippedLines = []
        for cookie in cookies { add(cookie) }
    }

    /// Parses the text of a `cookies.txt` file. Never fails: malformed lines go to ``skippedLines``.
    ///
    /// - Parameter text: The file's text.
    public init(parsing text: String) {
        self.init()
        // `isNewline` takes "\r\n" as one separator, so CRLF files need nothing special.
        let text = text.hasPrefix("\u{FEFF}") ? text.dropFirst() : Substring(text)
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        for (index, line) in lines.enumerated() {
            switch Self.parseLine(line) {
            case .cookie(let cookie): add(cookie)
            case .skip: continue
            case .malformed: skippedLines.append(index + 1)
            }
        }
    }

    /// Reads and parses a `cookies.txt` file.
    ///
    /// - Parameter path: The file's path (`~` is expanded).
    /// - Throws: ``SwoopError`` (file system) naming the path when it cannot be read, or (invalid
    ///   argument) when it is not UTF-8 text.
    public init(contentsOfFile path: String) throws {
        self.init(parsing: try CredentialFile.readText(path, what: "cookie file"))
    }

    /// The cookies a request to `url` sends at `now`, longest path first (ties in file order).
    ///
    /// - Parameters:
    ///   - url: The request URL.
    ///   - now: The current time, against which expiry is checked.
    /// - Returns: The matching cookies in `Cookie` header order.
    public func cookies(for url: URL, now: Date = Date()) -> [Cookie] {
        cookies.enumerated()
            .filter { $0.element.matches(url, now: now) }
            .sorted { ($0.element.path.utf8.count, -$0.offset) > ($1.element.path.utf8.count, -$1.offset) }
            .map(\.element)
    }

    /// The `Cookie` header value for a request to `url` at `now` (`a=b; c=d`), or `nil` when no cookie
    /// matches.
    ///
    /// - Parameters:
    ///   - url: The request URL.
    ///   - now: The current time, against which expiry is checked.
    public func headerValue(for url: URL, now: Date = Date()) -> String? {
        let matching = cookies(for: url, now: now)
        return matching.isEmpty ? nil : Self.headerValue(matching)
    }

    /// `name=value` pairs joined by `; `, as a `Cookie` header carries them.
    static func headerValue(_ cookies: [Cookie]) -> String {
        cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    private mutating func add(_ cookie: Cookie) {
        if let index = cookies.firstIndex(where: {
            $0.domain == cookie.domain && $0.path == cookie.path && $0.name == cookie.name
        }) {
            cookies[index] = cookie
        } else {
            cookies.append(cookie)
        }
    }

    private enum Line {
        case cookie(Cookie)
        case skip
        case malformed
    }

    private static func parseLine(_ line: Substring) -> Line {
        var line = line
        var httpOnly = false
        if line.hasPrefix("#HttpOnly_") {
            httpOnly = true
            line = line.dropFirst("#HttpOnly_".count)
        } else if line.hasPrefix("#") || line.allSatisfy(\.isWhitespace) {
            return .skip
        }
        var fields = line.split(separator: "\t", omittingEmptySubsequences: false)
        if fields.count == 8, fields[7].isEmpty { fields.removeLast() }  // one trailing tab
        guard fields.count == 6 || fields.count == 7,
            !fields[0].isEmpty, fields[0] != ".",
            let includeSubdomains = flag(fields[1]),
            let secure = flag(fields[3]),
            let expiry = Int64(fields[4]),
            !fields[5].isEmpty
        else { return .malformed }
        return .cookie(
            Cookie(
                domain: String(fields[0]), includeSubdomains: includeSubdomains, path: String(fields[2]), secure: secure,
                expires: expiry == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(expiry)),
                name: String(fields[5]), value: fields.count == 7 ? String(fields[6]) : "", httpOnly: httpOnly
            )
        )
    }

    private static func flag(_ field: Substring) -> Bool? {
        switch field.uppercased() {
        case "TRUE": true
        case "FALSE": false
        default: nil
        }
    }

    /// RFC 6265 §5.1.4: the cookie path is the request path, or a prefix of it that ends at a `/`.
    static func pathMatches(_ cookiePath: String, requestPath: String) -> Bool {
        guard requestPath.hasPrefix(cookiePath) else { return false }
        if requestPath.utf8.count == cookiePath.utf8.count || cookiePath.hasSuffix("/") { return true }
        return requestPath.utf8.dropFirst(cookiePath.utf8.count).first == UInt8(ascii: "/")
    }

    /// The request path as sent (percent-encoded), `/` when empty.
    static func requestPath(_ url: URL) -> String {
        let path = url.path(percentEncoded: true)
        return path.hasPrefix("/") ? path : "/"
    }

    /// Lowercased, without IPv6 brackets or a trailing dot, so `[::1]` and `Example.COM.` compare.
    static func normalizedHost(_ host: String) -> String {
        var host = host.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.hasSuffix("."), host.count > 1 { host.removeLast() }
        return host
    }

    /// An IPv6 literal, or a name whose last label is numeric (which URL parsers read as IPv4).
    static func isIPAddress(_ host: String) -> Bool {
        if host.contains(":") { return true }
        guard let last = host.split(separator: ".").last else { return false }
        return last.allSatisfy(\.isASCII) && last.allSatisfy(\.isNumber)
    }
}
