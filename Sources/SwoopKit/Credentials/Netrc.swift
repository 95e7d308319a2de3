import Foundation

/// Login and password per host from a `.netrc` file, as curl, wget and ftp read it.
///
/// Tokens are separated by any whitespace, newlines included: `machine NAME` starts an entry for one
/// host, `default` an entry for every other host; `login`, `password` and `account` set a field of the
/// entry they follow. `macdef NAME` and the lines after it up to a blank line (a macro) are skipped.
/// A line whose first non-blank character is `#` is a comment. A value may be quoted as curl allows:
/// `"two words"`, with `\"`, `\\`, `\n`, `\r` and `\t` escapes. Unknown words are ignored, as curl
/// ignores them; a keyword without its value, a field before any `machine`, or an unterminated quote is
/// an error naming the line.
public struct Netrc: Sendable, Hashable {
    /// One `machine` (or `default`) entry.
    public struct Entry: Sendable, Hashable {
        /// The host name as written, or `nil` for the `default` entry.
        public var machine: String?
        /// The `login` value.
        public var login: String?
        /// The `password` value.
        public var password: String?
        /// The `account` value (read, not used for HTTP).
        public var account: String?

        /// Creates an entry.
        ///
        /// - Parameters:
        ///   - machine: The host, or `nil` for the `default` entry.
        ///   - login: The login.
        ///   - password: The password.
        ///   - account: The account.
        public init(machine: String?, login: String? = nil, password: String? = nil, account: String? = nil) {
            self.machine = machine
            self.login = login
            self.password = password
            self.account = account
        }

        /// `Basic base64(login:password)`, or `nil` without a login (a missing password is empty).
        public var basicAuthorization: String? {
            guard let login else { return nil }
            return "Basic " + Data("\(login):\(password ?? "")".utf8).base64EncodedString()
        }
    }

    /// The entries in file order.
    public var entries: [Entry]

    /// Creates a netrc from entries.
    ///
    /// - Parameter entries: The entries, in file order.
    public init(entries: [Entry] = []) {
        self.entries = entries
    }

    /// Parses the text of a netrc file.
    ///
    /// - Parameters:
    ///   - text: The file's text.
    ///   - source: What errors call the text, usually its path.
    /// - Throws: ``SwoopError`` (invalid argument) naming `source:LINE` for a keyword without a value, a
    ///   field before any `machine` or `default`, or an unterminated quote.
    public init(parsing text: String, source: String = "netrc") throws {
        var scanner = Scanner(text: text, source: source)
        var entries: [Entry] = []
        while let token = try scanner.next() {
            switch token.keyword ?? "" {
            case "machine":
                entries.append(Entry(machine: try scanner.value(after: token).text))
            case "default":
                entries.append(Entry(machine: nil))
            case "login", "password", "account":
                let value = try scanner.value(after: token).text
                guard !entries.isEmpty else {
                    throw scanner.error(line: token.line, "'\(token.text)' before any 'machine' or 'default'")
                }
                switch token.keyword ?? "" {
                case "login": entries[entries.count - 1].login = value
                case "password": entries[entries.count - 1].password = value
                default: entries[entries.count - 1].account = value
                }
            case "macdef":
                _ = try scanner.value(after: token)
                scanner.skipMacro()
            default:
                continue  // Unknown words are ignored, as curl ignores them.
            }
        }
        self.entries = entries
    }

    /// Reads and parses a netrc file.
    ///
    /// - Parameter path: The file's path (`~` is expanded).
    /// - Throws: ``SwoopError`` (file system) naming the path when it cannot be read; (invalid argument)
    ///   naming `PATH:LINE` when it is malformed.
    public init(contentsOfFile path: String) throws {
        try self.init(parsing: try CredentialFile.readText(path, what: "netrc file"), source: path)
    }

    /// `~/.netrc` (from `HOME`).
    ///
    /// - Parameter environment: The environment to read `HOME` from.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        ((environment["HOME"] ?? NSHomeDirectory()) as NSString).appendingPathComponent(".netrc")
    }

    /// The entry for `host`: the first `machine` of that name (case-insensitive), else the first
    /// `default`, else `nil`.
    ///
    /// - Parameter host: The request's host, as in its URL.
    public func entry(for host: String) -> Entry? {
        let wanted = CookieJar.normalizedHost(host)
        return entries.first { $0.machine.map(CookieJar.normalizedHost) == wanted }
            ?? entries.first { $0.machine == nil }
    }

    /// The `Authorization` header value for `host` (see ``Entry/basicAuthorization``), or `nil`.
    ///
    /// - Parameter host: The request's host.
    public func authorization(for host: String) -> String? {
        entry(for: host)?.basicAuthorization
    }
}

extension Netrc {
    struct Token {
        var text: String
        var line: Int
        var quoted: Bool
        /// The text when it can be a keyword: quoted words never are.
        var keyword: String? { quoted ? nil : text }
    }

    /// Splits netrc text into tokens, line-aware for comments, macros and error messages.
    struct Scanner {
        private let scalars: [Unicode.Scalar]
        private let source: String
        private var index = 0
        private(set) var line = 1
        private var tokenOnLine = false

        init(text: String, source: String) {
            self.scalars = Array(text.unicodeScalars.drop(while: { $0 == "\u{FEFF}" }))  // a byte-order mark
            self.source = source
        }

        func error(line: Int, _ message: String) -> SwoopError {
            SwoopError(.invalidArgument, "\(source):\(line): \(message)")
        }

        /// The value following `keyword`.
        mutating func value(after keyword: Token) throws -> Token {
            guard let value = try next() else {
                throw error(line: keyword.line, "'\(keyword.text)' without a value")
            }
            return value
        }

        mutating func next() throws -> Token? {
            while index < scalars.count {
                let scalar = scalars[index]
                if scalar == "\n" {
                    newLine()
                } else if scalar.properties.isWhitespace {
                    index += 1
                } else if scalar == "#" && !tokenOnLine {
                    skipToEndOfLine()
                } else {
                    tokenOnLine = true
                    return scalar == "\"" ? try quoted() : plain()
                }
            }
            return nil
        }

        /// Skips the rest of the `macdef` line and the macro's lines up to and including a blank one.
        mutating func skipMacro() {
            skipToEndOfLine()
            while index < scalars.count {
                newLine()
                var end = index
                while end < scalars.count, scalars[end] != "\n" { end += 1 }
                let blank = scalars[index..<end].allSatisfy { $0.properties.isWhitespace }
                index = end
                if blank { return }
            }
        }

        private mutating func newLine() {
            index += 1
            line += 1
            tokenOnLine = false
        }

        private mutating func skipToEndOfLine() {
            while index < scalars.count, scalars[index] != "\n" { index += 1 }
        }

        private mutating func plain() -> Token {
            var text = String.UnicodeScalarView()
            while index < scalars.count, !scalars[index].properties.isWhitespace {
                text.append(scalars[index])
                index += 1
            }
            return Token(text: String(text), line: line, quoted: false)
        }

        private mutating func quoted() throws -> Token {
            let start = line
            index += 1  // the opening quote
            var text = String.UnicodeScalarView()
            while index < scalars.count, scalars[index] != "\n" {
                var scalar = scalars[index]
                index += 1
                if scalar == "\"" { return Token(text: String(text), line: start, quoted: true) }
                if scalar == "\\", index < scalars.count, scalars[index] != "\n" {
                    scalar = scalars[index]
                    index += 1
                    switch scalar {
                    case "n": scalar = "\n"
                    case "r": scalar = "\r"
                    case "t": scalar = "\t"
                    default: break
                    }
                }
                text.append(scalar)
            }
            throw error(line: start, "unterminated quoted value")
        }
    }
}
