import Foundation

/// One proxy server: what `--proxy` or a `*_proxy` variable names, parsed.
///
/// Accepted forms: `http://[user:password@]host[:port]`, `socks5://host[:port]`,
/// `socks5h://host[:port]`, and a bare `host[:port]` (an HTTP proxy). IPv6 hosts go in brackets.
/// A trailing `/` is ignored. Credentials are percent-decoded.
///
/// How AsyncHTTPClient uses each kind:
/// - ``Kind/http``: every request, `http` and `https` alike, goes through a `CONNECT` tunnel (there
///   is no absolute-form forwarding), and the credentials go only in the `CONNECT` request's
///   `Proxy-Authorization` (Basic).
/// - ``Kind/socks5`` and ``Kind/socks5h``: AsyncHTTPClient hands the URL's host name to the proxy
///   (`ATYP` domain) and resolves nothing itself, so both behave like curl's `socks5h` (remote DNS);
///   an IP-literal host is sent as an address. It has no SOCKS authentication, so credentials in
///   a SOCKS URL are refused rather than silently dropped.
public struct ProxySettings: Sendable, Hashable, CustomStringConvertible {
    /// The proxy protocol.
    public enum Kind: String, Sendable, Hashable {
        /// An HTTP proxy, used with `CONNECT`.
        case http
        /// SOCKS5 (the proxy resolves host names; see ``ProxySettings``).
        case socks5
        /// SOCKS5 with remote name resolution.
        case socks5h

        /// The port used when the URL names none: 80 for HTTP, 1080 for SOCKS. (curl uses 1080 for
        /// every kind; most other tools use 80 for `http://`.)
        public var defaultPort: Int { self == .http ? 80 : 1080 }
    }

    /// The proxy protocol.
    public var kind: Kind
    /// The proxy's host name or IP address (IPv6 without brackets).
    public var host: String
    /// The proxy's port.
    public var port: Int
    /// The user name for the proxy, percent-decoded.
    public var username: String?
    /// The password for the proxy, percent-decoded (empty when the URL gave a user but no password).
    public var password: String?

    /// Creates proxy settings from parts.
    public init(kind: Kind, host: String, port: Int, username: String? = nil, password: String? = nil) {
        self.kind = kind
        self.host = host
        self.port = port
        self.username = username
        self.password = password
    }

    /// Parses a proxy URL.
    ///
    /// - Parameters:
    ///   - text: The proxy URL, for example `http://user:secret@proxy:3128` or `socks5h://proxy`.
    ///   - source: Where the value came from (`https_proxy`, a command-line option), for the error message.
    /// - Throws: ``SwoopError`` (``SwoopError/Code/invalidArgument``) naming the source and the value
    ///   (its credentials masked) when the scheme, host, port or credentials are not acceptable.
    public init(parsing text: String, source: String = "the proxy setting") throws {
        func failure(_ reason: String) -> SwoopError {
            SwoopError(.invalidArgument, "invalid proxy \(Self.masked(text)) in \(source): \(reason)")
        }
        var rest = Substring(text.trimmingCharacters(in: .whitespaces))
        guard !rest.isEmpty else { throw failure("it is empty") }
        var kind = Kind.http
        if let separator = rest.range(of: "://") {
            let scheme = rest[..<separator.lowerBound].lowercased()
            guard let known = Kind(rawValue: scheme) else {
                throw failure("unsupported scheme \(scheme) (use http, socks5 or socks5h)")
            }
            kind = known
            rest = rest[separator.upperBound...]
        }
        if let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            guard rest[slash...] == "/" else { throw failure("a proxy URL has no path or query") }
            rest = rest[..<slash]
        }
        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let info = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let user = info.firstIndex(of: ":").map { info[..<$0] } ?? info
            let secret = info.firstIndex(of: ":").map { info[info.index(after: $0)...] } ?? ""
            guard let user = String(user).removingPercentEncoding, let secret = String(secret).removingPercentEncoding,
                !user.isEmpty
            else { throw failure("the credentials are not valid percent-encoded user:password") }
            guard kind == .http else {
                throw failure("SOCKS5 proxy authentication is not supported (AsyncHTTPClient has none)")
            }
            (username, password) = (user, secret)
        }
        let (host, portText) = try Self.splitHostPort(rest, failure: failure)
        guard !host.isEmpty else { throw failure("it names no host") }
        var port = kind.defaultPort
        if let portText {
            guard !portText.isEmpty else { throw failure("the port is missing after :") }
            guard let number = Int(portText), portText.allSatisfy({ $0.isASCII && $0.isNumber }), DownloadRequest.validPorts.contains(number) else {
                throw failure("the port \(portText) is not a number from 1 to 65535")
            }
            port = number
        }
        self.init(kind: kind, host: host, port: port, username: username, password: password)
    }

    /// `scheme://host:port`, with `user:***@` when there are credentials: never the password.
    public var description: String {
        let user = username.map { "\($0):***@" } ?? ""
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(kind.rawValue)://\(user)\(shownHost):\(port)"
    }

    /// Splits `host[:port]` or `[v6]:port`; the host's characters are checked.
    private static func splitHostPort(
        _ text: Substring, failure: (String) -> SwoopError
    ) throws -> (host: String, port: Substring?) {
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw failure("the IPv6 address has no closing ]") }
            let host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            guard host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }), host.contains(":") else {
                throw failure("\(host) is not an IPv6 address")
            }
            guard after.isEmpty || after.hasPrefix(":") else { throw failure("unexpected text after ]") }
            return (host.lowercased(), after.isEmpty ? nil : after.dropFirst())
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { throw failure("an IPv6 address must be in brackets") }
        let host = parts[0]
        let allowed = host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") }
        guard allowed else { throw failure("\(host) is not a host name") }
        return (host.lowercased(), parts.count == 2 ? parts[1] : nil)
    }

    /// A proxy URL as it can be shown: everything between the scheme and the last `@` (the
    /// credentials) replaced by `***`.
    public static func masked(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@") else { return text }
        let start = text.range(of: "://").map(\.upperBound) ?? text.startIndex
        guard start <= at else { return text }
        return String(text[..<start]) + "***" + String(text[at...])
    }
}

/// A `no_proxy` list: the hosts reached without a proxy, matched the way curl matches them.
///
/// Entries are separated by commas or white space. `*` alone matches every host. A name matches
/// itself and its subdomains, with or without a leading dot (`example.com` and `.example.com` both
/// match `example.com` and `a.example.com`, not `badexample.com`). An IP address matches only
/// itself (no CIDR ranges). An entry may end in `:port` to match only that port (`[v6]:port` for
/// IPv6). Case does not matter, nor does a trailing dot.
public struct NoProxyList: Sendable, Hashable {
    private struct Entry: Sendable, Hashable {
        var host: String
        var port: Int?
    }

    private let matchesAll: Bool
    private let entries: [Entry]

    /// Parses a list. Entries that are not understood are ignored, as curl does.
    ///
    /// - Parameter text: The list, for example `localhost,.internal.example, 10.0.0.1:8080`.
    public init(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        matchesAll = trimmed == "*"
        entries = trimmed.split(whereSeparator: { $0 == "," || $0.isWhitespace }).compactMap(Self.entry)
    }

    /// Whether requests to this host and port go direct.
    ///
    /// - Parameters:
    ///   - host: The URL's host (IPv6 with or without brackets).
    ///   - port: The URL's port, or the scheme's default.
    public func matches(host: String, port: Int) -> Bool {
        if matchesAll { return true }
        let host = Self.normalized(host)
        guard !host.isEmpty else { return false }
        let isAddress = Self.isIPAddress(host)
        return entries.contains { entry in
            if let wanted = entry.port, wanted != port { return false }
            if isAddress { return host == entry.host }
            return host == entry.host || host.hasSuffix("." + entry.host)
        }
    }

    private static func entry(_ token: Substring) -> Entry? {
        var text = token
        var port: Int?
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            let after = text[text.index(after: close)...]
            if after.hasPrefix(":") {
                guard let number = Int(after.dropFirst()) else { return nil }
                port = number
            }
            text = text[text.index(after: text.startIndex)..<close]
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            guard let number = Int(text[text.index(after: colon)...]) else { return nil }
            port = number
            text = text[..<colon]
        }
        var host = normalized(String(text))
        while host.hasPrefix(".") { host.removeFirst() }
        return host.isEmpty ? nil : Entry(host: host, port: port)
    }

    /// Lower case, no brackets, no trailing dot.
    private static func normalized(_ host: String) -> String {
        var host = host.lowercased()
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        while host.hasSuffix(".") { host.removeLast() }
        return host
    }

    private static func isIPAddress(_ host: String) -> Bool {
        if host.contains(":") { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
    }
}

/// Picks the proxy for each URL from ``Configuration/Proxy`` and the environment, as curl does.
///
/// - An explicit proxy (`--proxy`) is used for every URL; an empty one means "no proxy".
/// - Otherwise, when the environment is used: `https_proxy` then `HTTPS_PROXY` for https URLs,
///   `http_proxy` for http URLs (never `HTTP_PROXY`: a CGI program gets a request's `Proxy:`
///   header as that variable), then `all_proxy`, then `ALL_PROXY`. A variable that is set but empty
///   means no proxy and ends the search.
/// - A URL whose host matches the no-proxy list goes direct, whatever chose the proxy. The list is
///   ``Configuration/Proxy/noProxy`` (`--noproxy`) when given, else `no_proxy`, else `NO_PROXY`.
public struct ProxySelector: Sendable, Hashable {
    private enum Choice: Sendable, Hashable {
        /// An explicit proxy, or `nil` for "explicitly none".
        case explicit(ProxySettings?)
        /// From the environment, per scheme (`nil`: go direct).
        case environment(http: ProxySettings?, https: ProxySettings?)
    }

    private let choice: Choice
    private let noProxy: NoProxyList

    /// Reads the options and, when they say so, the environment. Every proxy that might be used is
    /// parsed now, so a bad value fails at once rather than halfway through a list of downloads.
    ///
    /// - Parameters:
    ///   - options: The explicit proxy, the no-proxy list and whether to read the environment.
    ///   - environment: The variables to read when `options.useEnvironment` is set.
    /// - Throws: ``SwoopError`` (``SwoopError/Code/invalidArgument``) naming the option or variable
    ///   whose proxy URL is not valid.
    public init(_ options: Configuration.Proxy, environment: [String: String]) throws {
        let environment = options.useEnvironment ? environment : [:]
        if let explicit = options.url {
            let trimmed = explicit.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty {
                choice = .explicit(nil)
            } else {
                choice = .explicit(try ProxySettings(parsing: trimmed, source: "the proxy setting"))
            }
        } else {
            func proxy(_ names: [String]) throws -> ProxySettings? {
                guard let name = names.first(where: { environment[$0] != nil }), let value = environment[name] else {
                    return nil
                }
                let trimmed = value.trimmingCharacters(in: .whitespaces)
                return trimmed.isEmpty ? nil : try ProxySettings(parsing: trimmed, source: name)
            }
            choice = .environment(
                http: try proxy(["http_proxy", "all_proxy", "ALL_PROXY"]),
                https: try proxy(["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"])
            )
        }
        noProxy = NoProxyList(options.noProxy ?? environment["no_proxy"] ?? environment["NO_PROXY"] ?? "")
    }

    /// The proxy for a URL, or `nil` to connect directly.
    ///
    /// - Parameter url: An http or https URL.
    public func proxy(for url: URL) -> ProxySettings? {
        let scheme = url.scheme?.lowercased() ?? ""
        let chosen: ProxySettings?
        switch choice {
        case .explicit(let proxy):
            chosen = proxy
        case .environment(let http, let https):
            chosen = scheme == "https" ? https : scheme == "http" ? http : nil
        }
        guard let chosen else { return nil }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return noProxy.matches(host: url.host ?? "", port: port) ? nil : chosen
    }
}
