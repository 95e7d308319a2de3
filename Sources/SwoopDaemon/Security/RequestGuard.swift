/// The daemon's rules for who may talk to it, decided from a request's headers alone. Pure.
///
/// - `Host` must name the daemon: its listen address, `localhost`, `127.0.0.1` or `[::1]` (with
///   the port), or a name given with `--allow-host`. A DNS-rebinding page reaches the daemon under
///   its own name and is refused.
/// - A request with an `Origin` must come from the daemon's own page or an origin given with
///   `--allow-origin`: a page in another tab cannot drive it, not even with a "simple" `text/plain`
///   POST (which browsers send without asking). Programs (aria2p, curl) send no `Origin`.
public struct RequestGuard: Sendable, Hashable {
    /// The `Host` values accepted, lower-cased (`host:port`).
    public private(set) var hosts: Set<String>
    /// The `Origin` values accepted, lower-cased (`http://host:port`).
    public private(set) var origins: Set<String>

    /// - Parameters:
    ///   - listen: The address the daemon listens on (with the port it got).
    ///   - allowHosts: More names for `Host` (`name` or `name:port`).
    ///   - allowOrigins: More origins (`https://ui.example.com`).
    public init(listen: ListenAddress, allowHosts: [String] = [], allowOrigins: [String] = []) {
        let port = listen.port
        let own = ["localhost", "127.0.0.1", "[::1]", listen.host.contains(":") ? "[\(listen.host)]" : listen.host]
        let withPorts = own.map { Self.withPort($0.lowercased(), port) }
        hosts = Set(withPorts + allowHosts.map { Self.withPort($0.lowercased(), port) })
        origins = Set(withPorts.map { "http://\($0)" } + allowOrigins.map { $0.lowercased().trimmingSuffix("/") })
    }

    /// `name` with `:port` unless it has a port already (`[::1]:6800`, `host:6800`).
    static func withPort(_ name: String, _ port: Int) -> String {
        let hasPort = name.hasPrefix("[") ? name.contains("]:") : name.contains(":")
        return hasPort ? name : "\(name):\(port)"
    }

    /// Why a request is refused, or `nil` when it may go on.
    public func refusal(host: String?, origin: String?) -> String? {
        guard let host, hosts.contains(host.lowercased()) else {
            return "Host \(host.map { "'\($0)'" } ?? "missing"): this daemon answers only to its own address (see --allow-host)"
        }
        if let origin, !origins.contains(origin.lowercased()) {
            return "Origin '\(origin)' may not use this daemon (see --allow-origin)"
        }
        return nil
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
