import Foundation
import SwoopKit

/// aria2's per-download options (`addUri`, `changeOption`), read into what Swoop stores with a
/// download. Pure: paths are checked against the daemon's download roots by ``DownloadRoots``.
///
/// Values are strings, as aria2 takes them; a value that is not a string is ignored, as aria2
/// ignores it, and so is an option Swoop does not know. A value Swoop cannot read is an error
/// naming the option.
public struct Aria2Options: Sendable {
    public var dir: String?
    public var out: String?
    public var headers: [(name: String, value: String)] = []
    public var checksum: Checksum?
    public var settings = DownloadSettings()
    public var collisionPolicy: CollisionPolicy?
    /// `pause=true`: added paused.
    public var pause = false

    /// The options Swoop reads, as aria2 names them.
    public static let names: Set<String> = [
        "dir", "out", "header", "checksum", "split", "max-connection-per-server", "min-split-size",
        "max-download-limit", "pause", "user-agent", "all-proxy", "max-tries", "retry-wait", "timeout",
        "connect-timeout", "check-certificate", "allow-overwrite", "auto-file-renaming",
    ]

    public init() {}

    /// Reads an options object.
    ///
    /// - Throws: ``RPCError`` (code 1) naming the option whose value cannot be read.
    public init(_ options: [String: JSONValue]) throws {
        func text(_ name: String) -> String? { options[name]?.string }
        dir = text("dir")
        out = text("out")
        if let out, out.isEmpty || out.hasSuffix("/") {
            throw RPCError.method("out: '\(out)' is not a file name")
        }
        switch options["header"] {
        case .string(let line)?: headers = [try Self.header(line)]
        case .array(let lines)?: headers = try lines.compactMap(\.string).map(Self.header)
        default: break
        }
        if let agent = text("user-agent") { headers.append((name: "User-Agent", value: agent)) }
        if let checksum = text("checksum") {
            do { self.checksum = try Checksum(parsing: checksum) } catch let error as SwoopError {
                throw RPCError.method("checksum: \(error.message)")
            }
        }
        // aria2 opens up to `split` connections, `max-connection-per-server` to each server: with
        // one server (and its mirrors counted alike) the smaller of the two.
        let split = try text("split").map { try Self.count($0, option: "split", in: 1...64) }
        let perServer = try text("max-connection-per-server").map { try Self.count($0, option: "max-connection-per-server", in: 1...64) }
        settings.maxConnections = [split, perServer].compactMap { $0 }.min()
        settings.minSplitSize = try text("min-split-size").map { try Self.size($0, option: "min-split-size") }
        settings.bytesPerSecond = try text("max-download-limit").map { try Self.size($0, option: "max-download-limit") }
        settings.proxy = text("all-proxy")
        if let tries = try text("max-tries").map({ try Self.count($0, option: "max-tries", in: 0...1001) }) {
            // aria2 counts the first try; 0 is "no limit", Swoop's most retries.
            settings.maxRetries = tries == 0 ? 1000 : tries - 1
        }
        settings.retryWait = try text("retry-wait").map { Double(try Self.count($0, option: "retry-wait", in: 0...600)) }
        if settings.retryWait == 0 { settings.retryWait = 0.001 }
        settings.idleTimeout = try text("timeout").map { Double(try Self.count($0, option: "timeout", in: 1...600)) }
        settings.connectTimeout = try text("connect-timeout").map { Double(try Self.count($0, option: "connect-timeout", in: 1...600)) }
        if let check = try text("check-certificate").map({ try Self.flag($0, option: "check-certificate") }) {
            settings.insecure = !check
        }
        let overwrite = try text("allow-overwrite").map { try Self.flag($0, option: "allow-overwrite") }
        let renaming = try text("auto-file-renaming").map { try Self.flag($0, option: "auto-file-renaming") }
        if overwrite == true {
            collisionPolicy = .overwrite
        } else if renaming == false {
            collisionPolicy = .fail
        } else if overwrite != nil || renaming != nil {
            collisionPolicy = .rename
        }
        pause = try text("pause").map { try Self.flag($0, option: "pause") } ?? false
    }

    /// `Name: value`, as aria2's `header` option takes each header.
    static func header(_ line: String) throws -> (name: String, value: String) {
        guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
            throw RPCError.method("header: '\(line)' is not 'Name: value'")
        }
        let name = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
        let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        guard !name.contains(where: { $0.isWhitespace }), !line.contains(where: { $0 == "\r" || $0 == "\n" }) else {
            throw RPCError.method("header: '\(line)' is not 'Name: value'")
        }
        if let problem = HTTPHeaderField.problem(name: name, value: value) {
            throw RPCError.method("header: '\(line)': \(problem)")
        }
        return (name, value)
    }

    static func count(_ text: String, option: String, in range: ClosedRange<Int>) throws -> Int {
        guard let value = Int(text), range.contains(value) else {
            throw RPCError.method("\(option): '\(text)' is not a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// aria2's sizes: bytes, or with K or M (1024-based).
    static func size(_ text: String, option: String) throws -> Int {
        guard let value = ByteFormatting.parseSize(text) else {
            throw RPCError.method("\(option): '\(text)' is not a size (bytes, or a number with K or M)")
        }
        return value
    }

    static func flag(_ text: String, option: String) throws -> Bool {
        switch text {
        case "true": return true
        case "false": return false
        default: throw RPCError.method("\(option): '\(text)' is not true or false")
        }
    }
}
