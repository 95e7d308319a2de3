/// The elements, attributes and text of a small UTF-8 XML document, for Metalink files (pure).
///
/// Why not FoundationXML: it links libxml2, which loads libicuuc and liblzma into every `swoop`
/// at start (1 MiB resident, 0.3 ms to the first request) for a file format few runs read.
///
/// Checks well-formedness: tags nest and match, one root element, attributes quoted and not
/// repeated, the five predefined entities and character references only. A document type with
/// declarations (`<!DOCTYPE x [ … ]>`) is refused, so no entity is ever expanded. Comments,
/// processing instructions and the XML declaration are skipped; CDATA sections are text. UTF-8 (and
/// so ASCII), or ISO-8859-1 when the declaration says so; UTF-16 and other encodings are refused.
struct XMLReader {
    enum Event: Equatable {
        case start(name: String, attributes: [String: String])
        case end(name: String)
        case text(String)
    }

    /// Why a document was refused, and on which line.
    struct Failure: Error, Equatable {
        var line: Int
        var reason: String
    }

    private let bytes: [UInt8]
    private var index = 0
    private var open: [String] = []
    private var sawRoot = false
    private var events: [Event] = []

    private init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The document's events in order.
    static func events(of bytes: [UInt8]) throws(Failure) -> [Event] {
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
            throw Failure(line: 1, reason: "UTF-16 is not supported (UTF-8 or ISO-8859-1)")
        }
        // A byte-order mark says UTF-8 and nothing else.
        var bytes = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
        if let encoding = declaredEncoding(bytes)?.lowercased(), !["utf-8", "utf8", "us-ascii", "ascii"].contains(encoding) {
            guard ["iso-8859-1", "latin1", "latin-1", "iso8859-1"].contains(encoding) else {
                throw Failure(line: 1, reason: "encoding \(declaredEncoding(bytes) ?? encoding) is not supported (UTF-8 or ISO-8859-1)")
            }
            // Each byte is the character of that number.
            bytes = bytes.flatMap { $0 < 0x80 ? [$0] : [0xC0 | $0 >> 6, 0x80 | $0 & 0x3F] }
        }
        var reader = XMLReader(bytes)
        try reader.read()
        return reader.events
    }

    /// The `encoding` of an XML declaration at the start of `bytes`.
    private static func declaredEncoding(_ bytes: [UInt8]) -> String? {
        guard bytes.starts(with: Array("<?xml".utf8)), let end = bytes.firstIndex(of: UInt8(ascii: ">")) else { return nil }
        let declaration = String(decoding: bytes[..<end], as: UTF8.self)
        guard let found = declaration.split(separator: "encoding", maxSplits: 1).dropFirst().first else { return nil }
        let rest = found.drop { $0 == " " || $0 == "=" || $0 == "\n" || $0 == "\t" || $0 == "\r" }
        guard let quote = rest.first, quote == "\"" || quote == "'" else { return nil }
        return String(rest.dropFirst().prefix { $0 != quote })
    }

    private mutating func read() throws(Failure) {
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "<") {
                try markup()
            } else {
                let end = bytes[index...].firstIndex(of: UInt8(ascii: "<")) ?? bytes.count
                if open.isEmpty {
                    // Only white space around the root element, as XML counts it.
                    if let stray = bytes[index..<end].firstIndex(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
                        throw fail("text outside the root element", at: stray)
                    }
                } else {
                    let text = try decode(bytes[index..<end])
                    events.append(.text(text))
                }
                index = end
            }
        }
        if let name = open.last { throw fail("<\(name)> is not closed") }
        guard sawRoot else { throw fail("no root element") }
    }

    private mutating func markup() throws(Failure) {
        if skip("<?") {
            _ = try until("?>")
        } else if skip("<!--") {
            _ = try until("-->")
        } else if skip("<![CDATA[") {
            let content = try until("]]>")
            guard !open.isEmpty else { throw fail("text outside the root element") }
            events.append(.text(try utf8(content)))
        } else if skip("<!DOCTYPE") {
            let declaration = try until(">")
            if declaration.contains(UInt8(ascii: "[")) { throw fail("a document type with declarations is not supported") }
        } else if skip("</") {
            let name = try name()
            skipSpace()
            guard skip(">") else { throw fail("expected > after </\(name)") }
            guard open.last == name else { throw fail(open.last.map { "</\(name)> closes <\($0)>" } ?? "</\(name)> closes nothing") }
            open.removeLast()
            events.append(.end(name: name))
        } else {
            index += 1
            try startTag()
        }
    }

    private mutating func startTag() throws(Failure) {
        let name = try name()
        guard open.isEmpty ? !sawRoot : true else { throw fail("a second root element <\(name)>") }
        sawRoot = true
        var attributes: [String: String] = [:]
        while true {
            let spaced = skipSpace()
            if skip("/>") || skip(">") {
                events.append(.start(name: name, attributes: attributes))
                if bytes[index - 2] == UInt8(ascii: "/") {
                    events.append(.end(name: name))
                } else {
                    open.append(name)
                }
                return
            }
            guard spaced else { throw fail("expected a space, > or /> in <\(name)>") }
            let attribute = try self.name()
            skipSpace()
            guard skip("=") else { throw fail("expected = after \(attribute) in <\(name)>") }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
                throw fail("the value of \(attribute) in <\(name)> is not quoted")
            }
            let quote = bytes[index]
            index += 1
            guard let end = bytes[index...].firstIndex(of: quote) else { throw fail("the value of \(attribute) is not closed") }
            guard !bytes[index..<end].contains(UInt8(ascii: "<")) else { throw fail("< in the value of \(attribute)") }
            guard attributes.updateValue(try decode(bytes[index..<end]), forKey: attribute) == nil else {
                throw fail("\(attribute) given twice in <\(name)>")
            }
            index = end + 1
        }
    }

    // MARK: - Pieces

    private mutating func name() throws(Failure) -> String {
        let start = index
        while index < bytes.count, Self.isNameByte(bytes[index], first: index == start) { index += 1 }
        guard index > start else { throw fail("expected a name") }
        return try utf8(bytes[start..<index])
    }

    private static func isNameByte(_ byte: UInt8, first: Bool) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "_"), UInt8(ascii: ":"), 0x80...:
            return true
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."):
            return !first
        default:
            return false
        }
    }

    @discardableResult
    private mutating func skipSpace() -> Bool {
        let start = index
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        return index > start
    }

    private mutating func skip(_ literal: String) -> Bool {
        guard bytes[index...].starts(with: literal.utf8) else { return false }
        index += literal.utf8.count
        return true
    }

    /// The bytes up to `terminator`, which is passed.
    private mutating func until(_ terminator: String) throws(Failure) -> ArraySlice<UInt8> {
        let marker = Array(terminator.utf8)
        var end = index
        while end + marker.count <= bytes.count {
            if bytes[end..<end + marker.count].elementsEqual(marker) {
                defer { index = end + marker.count }
                return bytes[index..<end]
            }
            end += 1
        }
        throw fail("\(terminator) is missing")
    }

    /// Text or an attribute value, with its entity and character references replaced.
    private func decode(_ raw: ArraySlice<UInt8>) throws(Failure) -> String {
        guard raw.contains(UInt8(ascii: "&")) else { return try utf8(raw) }
        var out: [UInt8] = []
        var i = raw.startIndex
        while i < raw.endIndex {
            guard raw[i] == UInt8(ascii: "&") else {
                out.append(raw[i])
                i += 1
                continue
            }
            guard let semicolon = raw[i...].firstIndex(of: UInt8(ascii: ";")) else { throw fail("an & that starts no reference", at: i) }
            let reference = String(decoding: raw[(i + 1)..<semicolon], as: UTF8.self)
            let scalar: Unicode.Scalar?
            switch reference {
            case "lt": scalar = "<"
            case "gt": scalar = ">"
            case "amp": scalar = "&"
            case "quot": scalar = "\""
            case "apos": scalar = "'"
            case _ where reference.hasPrefix("#x"): scalar = Self.character(reference.dropFirst(2), radix: 16)
            case _ where reference.hasPrefix("#"): scalar = Self.character(reference.dropFirst(), radix: 10)
            default: throw fail("unknown entity &\(reference);", at: i)
            }
            guard let scalar else { throw fail("&\(reference); is not a character", at: i) }
            out += Array(String(Character(scalar)).utf8)
            i = semicolon + 1
        }
        return try utf8(out[...])
    }

    /// A character reference's character: digits only, and a character XML allows.
    private static func character(_ digits: Substring, radix: Int) -> Unicode.Scalar? {
        guard !digits.isEmpty, digits.allSatisfy({ $0.isHexDigit && (radix == 16 || $0.isNumber) }),
            let value = UInt32(digits, radix: radix), let scalar = Unicode.Scalar(value)
        else { return nil }
        switch value {
        case 0x9, 0xA, 0xD, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: return scalar
        default: return nil
        }
    }

    private func utf8(_ raw: ArraySlice<UInt8>) throws(Failure) -> String {
        guard let text = String(validating: raw, as: UTF8.self) else { throw fail("not UTF-8", at: raw.startIndex) }
        return text
    }

    /// A failure on the line of `position` (by default, where the reader is).
    private func fail(_ reason: String, at position: Int? = nil) -> Failure {
        let end = min(position ?? index, bytes.count)
        return Failure(line: bytes[..<end].reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }, reason: reason)
    }
}
