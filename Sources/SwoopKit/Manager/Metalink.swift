import Foundation

/// Metalink files (RFC 5854, and the older 3.0 format): files with their mirrors, sizes and hashes,
/// as `swoop get --metalink FILE` reads them. Parsing only; the requests are made by the caller.
public enum Metalink {
    /// One file of a Metalink.
    public struct File: Sendable, Hashable {
        /// The file name (`<file name="…">`).
        public var name: String
        /// The length, when given (`<size>`).
        public var size: Int?
        /// Its URLs, by priority (lower first; RFC 5854's `priority` attribute, 3.0's `preference`
        /// with higher first), in document order among equals.
        public var urls: [String]
        /// The strongest hash given: sha-256, else sha-1, else md5.
        public var checksum: Checksum?
    }

    /// Reads the files of a Metalink document.
    ///
    /// - Parameter source: What to name in errors (the file's path).
    /// - Throws: ``SwoopError/Code/invalidArgument`` naming `source` when it is not XML, has no file
    ///   with a URL, or a file's name or hash is not usable.
    public static func parse(_ data: Data, source: String) throws -> [File] {
        let events: [XMLReader.Event]
        do {
            events = try XMLReader.events(of: Array(data))
        } catch {
            throw SwoopError(.invalidArgument, "cannot read Metalink \(source) (line \(error.line)): \(error.reason)")
        }
        var reader = Reader()
        for event in events {
            switch event {
            case .start(let name, let attributes): reader.start(name, attributes: attributes)
            case .text(let text): reader.text += text
            case .end(let name): reader.end(name)
            }
        }
        if let problem = reader.problem { throw SwoopError(.invalidArgument, "Metalink \(source): \(problem)") }
        let files = reader.files.filter { !$0.urls.isEmpty }
        guard !files.isEmpty else { throw SwoopError(.invalidArgument, "Metalink \(source) names no file with a URL") }
        return files
    }

    /// Collects `<file>` elements and what they hold.
    private struct Reader {
        struct Pending {
            var name: String
            var size: Int?
            var urls: [(rank: Int, order: Int, url: String)] = []
            var hashes: [String: String] = [:]
        }

        var files: [File] = []
        var problem: String?
        var text = ""
        private var current: Pending?
        private var attributes: [String: String] = [:]

        mutating func start(_ element: String, attributes: [String: String]) {
            text = ""
            self.attributes = attributes
            if local(element) == "file" { current = Pending(name: attributes["name"] ?? "") }
        }

        mutating func end(_ element: String) {
            let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
            switch local(element) {
            case "url" where current != nil && (value.lowercased().hasPrefix("http://") || value.lowercased().hasPrefix("https://")):
                // Only http(s): ftp, rsync and torrent links are left out.
                // RFC 5854: priority 1 is first. Metalink 3.0: preference 100 is first (its range is
                // 0-100: clamped, so that no number in a document overflows the rank).
                let preference = attributes["preference"].flatMap(Int.init).map { 1000 - min(max($0, 0), 100) }
                let rank = attributes["priority"].flatMap(Int.init) ?? preference ?? 999_999
                let order = current?.urls.count ?? 0
                current?.urls.append((rank, order, value))
            case "size" where current != nil:
                current?.size = Int(value)
            case "hash" where current != nil:
                if let type = attributes["type"]?.lowercased() { current?.hashes[type.replacingOccurrences(of: "-", with: "")] = value.lowercased() }
            case "file":
                if let done = current { finish(done) }
                current = nil
            default:
                break
            }
            text = ""
        }

        private mutating func finish(_ pending: Pending) {
            guard FileNaming.sanitize(pending.name) == pending.name, !pending.name.isEmpty else {
                problem = problem ?? "the file name '\(pending.name)' is not a plain file name"
                return
            }
            var checksum: Checksum?
            for (type, label) in [("sha256", "sha-256"), ("sha1", "sha-1"), ("md5", "md5")] {
                guard checksum == nil, let hex = pending.hashes[type] else { continue }
                do {
                    checksum = try Checksum(parsing: "\(label)=\(hex)")
                } catch {
                    problem = problem ?? "the \(label) hash of \(pending.name) is not valid: \(hex)"
                }
            }
            let urls = pending.urls.sorted { ($0.rank, $0.order) < ($1.rank, $1.order) }.map(\.url)
            files.append(File(name: pending.name, size: pending.size, urls: urls, checksum: checksum))
        }

        /// An element's name without its namespace prefix.
        private func local(_ name: String) -> String {
            name.split(separator: ":").last.map(String.init) ?? name
        }
    }
}
