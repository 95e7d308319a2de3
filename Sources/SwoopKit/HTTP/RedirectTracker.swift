import Foundation

/// Pure redirect rules: a limit, loop detection, no https→http downgrade unless allowed, and
/// credentials that stay with the origin they were meant for.
struct RedirectTracker: Sendable {
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]
    /// Headers that carry credentials and are never sent to another origin.
    static let credentialHeaders: Set<String> = ["authorization", "cookie", "proxy-authorization"]

    let original: URL
    let policy: Configuration.Redirects
    private(set) var current: URL
    private var visited: Set<String>
    private(set) var count = 0

    init(original: URL, policy: Configuration.Redirects) {
        self.original = original
        self.policy = policy
        self.current = original
        self.visited = [original.absoluteString]
    }

    /// Moves to the target of a redirect from ``current``.
    ///
    /// - Throws: ``SwoopError/Code/redirect`` for a missing or bad Location, a loop, the limit or a
    ///   downgrade.
    mutating func follow(status: Int, location: String?) throws -> URL {
        guard let location, !location.isEmpty else {
            throw SwoopError(.redirect, "HTTP \(status) redirect without a Location header from \(current.absoluteString)")
        }
        guard let target = URL(string: location, relativeTo: current)?.absoluteURL,
            let scheme = target.scheme?.lowercased(), target.host != nil
        else {
            throw SwoopError(.redirect, "invalid redirect Location '\(location)' from \(current.absoluteString)")
        }
        if let problem = DownloadRequest.portProblem(target) {
            throw SwoopError(.redirect, "invalid redirect Location '\(location)' from \(current.absoluteString): \(problem)")
        }
        guard scheme == "http" || scheme == "https" else {
            throw SwoopError(.redirect, "refusing redirect to unsupported scheme '\(scheme)': \(target.absoluteString)")
        }
        if current.scheme?.lowercased() == "https", scheme == "http", !policy.allowInsecureDowngrade {
            throw SwoopError(
                .redirect,
                "refusing redirect from https to http: \(current.absoluteString) → \(target.absoluteString)"
            )
        }
        guard count < policy.maxRedirects else {
            throw SwoopError(.redirect, "too many redirects (more than \(policy.maxRedirects)) from \(original.absoluteString)")
        }
        guard visited.insert(target.absoluteString).inserted else {
            throw SwoopError(.redirect, "redirect loop detected at \(target.absoluteString)")
        }
        count += 1
        current = target
        return target
    }

    /// The headers to send to ``current``: credentials only while it has the original's origin.
    func headers(_ headers: [(name: String, value: String)]) -> [(name: String, value: String)] {
        guard !Self.sameOrigin(current, original) else { return headers }
        return headers.filter { !Self.credentialHeaders.contains($0.name.lowercased()) }
    }

    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased()
            && effectivePort(a) == effectivePort(b)
    }

    private static func effectivePort(_ url: URL) -> Int? {
        url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
    }
}
