/// What identifies a download in the store: the same URL to the same directory under the same
/// requested name is the same download.
public struct DownloadKey: Sendable, Hashable {
    public var url: String
    public var directory: String
    /// The name given with `-o` (or in a `-i` list), or "".
    public var requestedName: String

    public init(url: String, directory: String, requestedName: String) {
        self.url = url
        self.directory = directory
        self.requestedName = requestedName
    }
}

/// One request header, as stored.
public struct HTTPHeaderField: Sendable, Codable, Hashable {
    public var name: String
    public var value: String
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// Why a header `name: value` cannot be sent, or `nil` when it can: a name is a token (RFC 9110
    /// §5.1, ``Syntax/isTokenCharacter(_:)``; NIO traps on any other byte), a value has no
    /// control character but tab (§5.5).
    public static func problem(name: String, value: String) -> String? {
        if name.isEmpty { return "the name is empty" }
        if let bad = name.unicodeScalars.first(where: { !Syntax.isTokenCharacter($0) }) {
            return "a header name cannot have '\(bad.escaped(asASCII: bad.value < 0x20 || bad.value == 0x7F))'"
        }
        if value.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
            return "a header value cannot have control characters"
        }
        return nil
    }

    /// The one rule for laying headers over others: each of `new` replaces the ones of the same
    /// name (case-insensitively), in order; one with an empty value removes them (curl's
    /// `-H 'Name:'`).
    public static func merged(
        _ headers: [(name: String, value: String)], _ new: [(name: String, value: String)]
    ) -> [(name: String, value: String)] {
        var result = headers
        for header in new {
            result.removeAll { $0.name.lowercased() == header.name.lowercased() }
            if !header.value.isEmpty { result.append(header) }
        }
        return result
    }
}
