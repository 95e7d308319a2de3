import Foundation
import SwoopKit

/// Where a fleet's PostgreSQL is, from a libpq-style URL: `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`
/// with `?sslmode=…` (`disable`, `prefer`, `require`, `verify-ca`, `verify-full`, as libpq's), and
/// `?host=/path/to/dir` for a Unix socket directory (the socket is `.s.PGSQL.PORT` in it). A password
/// in the URL is taken, but `PGPASSWORD` or a password file keeps it out of `ps` (see
/// ``withPassword(environment:file:)``). Pure: no connection is made here.
public struct PostgresAddress: Sendable, Hashable {
    /// How the connection is secured, as libpq's `sslmode` names it.
    public enum TLSMode: String, Sendable, Hashable, CaseIterable {
        /// Plain TCP.
        case disable
        /// TLS when the server offers it, without checking its certificate (libpq's default).
        case prefer
        /// TLS or no connection, without checking the certificate (libpq's meaning).
        case require
        /// TLS, the certificate checked against the trusted roots, not the host name.
        case verifyCA = "verify-ca"
        /// TLS, the certificate and the host name checked.
        case verifyFull = "verify-full"
    }

    public var user: String
    public var password: String?
    /// A host name or address; for a Unix socket, the socket's directory (starts with `/`).
    public var host: String
    public var port: Int
    public var database: String
    public var tlsMode: TLSMode
    /// A file of trusted root certificates (PEM), libpq's `sslrootcert`.
    public var rootCertificates: String?

    public init(user: String, password: String? = nil, host: String, port: Int = 5432, database: String, tlsMode: TLSMode = .prefer, rootCertificates: String? = nil) {
        self.user = user
        self.password = password
        self.host = host
        self.port = port
        self.database = database
        self.tlsMode = tlsMode
        self.rootCertificates = rootCertificates
    }

    /// Whether the connection goes through a Unix socket.
    public var isUnixSocket: Bool { host.hasPrefix("/") }

    /// The socket file for a Unix socket directory.
    public var socketPath: String { host + "/.s.PGSQL.\(port)" }

    /// The URL again, without its password (for messages and `swoop nodes`).
    public var description: String {
        let place = isUnixSocket ? "?host=\(host)" : ""
        let server = isUnixSocket ? "" : (host.contains(":") ? "[\(host)]" : host) + (port == 5432 ? "" : ":\(port)")
        return "postgres://\(user)@\(server)/\(database)\(place)"
    }

    /// Parses `text`; the error names what is wrong with it.
    public init(parsing text: String) throws {
        func invalid(_ why: String) -> SwoopError {
            SwoopError(.invalidArgument, "invalid PostgreSQL address \(Self.redacted(text)): \(why)")
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            throw invalid("expected postgres://USER@HOST[:PORT]/DATABASE")
        }
        guard scheme == "postgres" || scheme == "postgresql" else { throw invalid("the scheme must be postgres://") }
        var host = components.host.map { $0.hasPrefix("[") && $0.hasSuffix("]") ? String($0.dropFirst().dropLast()) : $0 } ?? ""
        var tlsMode = TLSMode.prefer
        var rootCertificates: String?
        for item in components.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    throw invalid("sslmode=\(value): use \(TLSMode.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                tlsMode = mode
            case "host":
                host = value
            case "sslrootcert":
                rootCertificates = value
            default:
                throw invalid("unknown parameter \(item.name)")
            }
        }
        guard !host.isEmpty else { throw invalid("no host (or ?host=/socket/directory)") }
        guard let user = components.user.flatMap({ $0.removingPercentEncoding }), !user.isEmpty else {
            throw invalid("no user name (postgres://USER@HOST/DATABASE)")
        }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else { throw invalid("no database name (postgres://USER@HOST/DATABASE)") }
        let port = components.port ?? 5432
        guard (1...65535).contains(port) else { throw invalid("port \(port) is out of range") }
        if host.hasPrefix("/"), tlsMode != .prefer, tlsMode != .disable {
            throw invalid("sslmode=\(tlsMode.rawValue) over a Unix socket")
        }
        self.init(
            user: user, password: components.password.flatMap { $0.removingPercentEncoding }, host: host, port: port,
            database: database.removingPercentEncoding ?? database, tlsMode: host.hasPrefix("/") ? .disable : tlsMode,
            rootCertificates: rootCertificates
        )
    }

    /// The address with its password from `PGPASSWORD`, else from `file` (its first line), else as
    /// given in the URL. A file that cannot be read is an error naming it.
    public func withPassword(environment: [String: String], file: String?) throws -> PostgresAddress {
        var address = self
        if let file {
            guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
                throw SwoopError(.fileSystem, "cannot read the PostgreSQL password file \(file)")
            }
            address.password = String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
        } else if let password = environment["PGPASSWORD"] {
            address.password = password
        }
        return address
    }

    /// `text` with any password in it replaced by `***`.
    static func redacted(_ text: String) -> String {
        guard let scheme = text.range(of: "://") else { return text }
        // The user information ends at the last @ before the path (a password may hold an @).
        let authority = text[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" }
        guard let at = authority.lastIndex(of: "@") else { return text }
        let credentials = text[scheme.upperBound..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }
}
