/// Where the daemon listens: `HOST:PORT`, `[IPv6]:PORT`, or `HOST` alone (port 6800, aria2's).
public struct ListenAddress: Sendable, Hashable, CustomStringConvertible {
    public static let defaultPort = 6800

    /// The host as given, without brackets (`127.0.0.1`, `::1`, `localhost`, `0.0.0.0`).
    public var host: String
    /// The port; 0 asks the system for a free one.
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `--listen`.
    ///
    /// - Throws: ``DaemonError`` naming the text when it is not an address.
    public init(parsing text: String) throws {
        var host = Substring(text)
        var port = Self.defaultPort
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw DaemonError("--listen \(text): an IPv6 address needs a closing ]") }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let value = Int(rest.dropFirst()) else { throw DaemonError("--listen \(text): expected [ADDRESS]:PORT") }
                port = value
            }
        } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
            guard let value = Int(host[host.index(after: colon)...]) else { throw DaemonError("--listen \(text): the port is not a number") }
            port = value
            host = host[..<colon]
        }
        guard !host.isEmpty, (0...65535).contains(port) else { throw DaemonError("--listen \(text): expected HOST:PORT with a port from 0 to 65535") }
        self.host = String(host)
        self.port = port
    }

    /// Whether only this machine can connect: 127.0.0.0/8, ::1 or `localhost`.
    public var isLoopback: Bool {
        if host == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// `host:port`, with brackets around an IPv6 address.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// An error that stops the daemon from starting, or a refused request, in one sentence.
public struct DaemonError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// Another daemon holds what this one needs (its state directory): exit status 7, not 2.
    public var isInUse: Bool
    public init(_ message: String, isInUse: Bool = false) {
        self.message = message
        self.isInUse = isInUse
    }
    public var description: String { message }
}
