import Foundation

extension Configuration {
    /// Cookies and netrc logins, each sent only to the hosts it names. Applied afresh to every hop of
    /// a redirect chain, after ``RedirectTracker`` has dropped the caller's own credential headers on a
    /// cross-origin hop, so a redirect to another host gets that host's cookies and login, never the
    /// first host's. Not stored with downloads: give them again to continue one.
    public struct Credentials: Sendable, Hashable {
        /// Cookies to send to the hosts and paths they match.
        public var cookies: CookieJar?
        /// Logins to send as `Authorization: Basic` to the hosts they name.
        public var netrc: Netrc?

        /// No cookies, no netrc.
        public init() {}

        /// The headers of one request (one hop) to `url`: `headers` plus the jar's cookies and the
        /// netrc login for its host.
        ///
        /// Cookies go into the request's `Cookie` header after the caller's own; a jar cookie whose name
        /// the caller's header already has is left out, so the caller's value wins. The netrc login is
        /// added only when `headers` has no `Authorization` (the caller's wins).
        ///
        /// - Parameters:
        ///   - url: The URL of this hop.
        ///   - headers: The hop's headers so far (the caller's, already filtered for this origin).
        ///   - now: The current time, against which cookie expiry is checked.
        /// - Returns: `headers` with `Cookie` and `Authorization` added or extended.
        public func headers(
            for url: URL, adding headers: [(name: String, value: String)], now: Date = Date()
        ) -> [(name: String, value: String)] {
            var result = headers
            if let cookies { Self.addCookies(cookies.cookies(for: url, now: now), to: &result) }
            if let host = url.host, let authorization = netrc?.authorization(for: host),
                !result.contains(where: { $0.name.lowercased() == "authorization" })
            {
                result.append((name: "Authorization", value: authorization))
            }
            return result
        }

        private static func addCookies(_ cookies: [CookieJar.Cookie], to headers: inout [(name: String, value: String)]) {
            guard !cookies.isEmpty else { return }
            guard let index = headers.firstIndex(where: { $0.name.lowercased() == "cookie" }) else {
                headers.append((name: "Cookie", value: CookieJar.headerValue(cookies)))
                return
            }
            let own = headers[index].value.trimmingCharacters(in: CharacterSet(charactersIn: "; \t"))
            let ownNames = Set(own.split(separator: ";").map { $0.split(separator: "=", maxSplits: 1).first.map(trimmed) ?? "" })
            let added = cookies.filter { !ownNames.contains($0.name) }
            let parts = (own.isEmpty ? [] : [own]) + (added.isEmpty ? [] : [CookieJar.headerValue(added)])
            headers[index].value = parts.joined(separator: "; ")
        }

        private static func trimmed(_ text: Substring) -> String {
            text.trimmingCharacters(in: .whitespaces)
        }
    }
}
