/// Reads JSON text (RFC 8259) into a ``JSONValue``, byte by byte.
///
/// Every request the daemon answers is parsed first; `JSONDecoder` decoding a ``JSONValue`` tries
/// each kind in turn with a thrown error per miss, which took longer than answering `tellActive`
/// itself. This parser is strict where RFC 8259 is (no trailing commas, comments, single quotes,
/// control characters in strings, leading zeros, or text after the value), takes the last of
/// duplicate keys, and stops at ``maxDepth`` nested arrays and objects, so a hostile body cannot
/// exhaust the stack.
struct JSONParser {
    /// The deepest nesting of arrays and objects read (JSONDecoder's limit too).
    static let maxDepth = 512

    private struct Failure: Error {}

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The value `text` holds, or `nil` when it is not exactly one JSON value.
    static func parse(_ text: some Collection<UInt8>) -> JSONValue? {
        let parsed = text.withContiguousStorageIfAvailable { parse(buffer: $0) }
        return parsed ?? Array(text).withUnsafeBufferPointer { parse(buffer: $0) }
    }

    private static func parse(buffer: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        var parser = JSONParser(buffer)
        guard let value = try? parser.value() else { return nil }
        parser.skipWhitespace()
        // (Not a ternary: its `nil` would be read as the JSON literal `null`.)
        guard parser.index == buffer.count else { return nil }
        return value
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard current == byte else { throw Failure() }
        index += 1
    }

    private mutating func value() throws -> JSONValue {
        skipWhitespace()
        guard let byte = current else { throw Failure() }
        switch byte {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default: return try number()
        }
    }

    private mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw Failure() }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw Failure() }
        index += count
    }

    /// The items of an array or an object after its opening bracket, each read by `item`, comma
    /// separated, up to `closing`; one level deeper while they are read.
    private mutating func items(closing: UInt8, _ item: (inout JSONParser) throws -> Void) throws {
        depth += 1
        guard depth <= Self.maxDepth else { throw Failure() }
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if current == closing {
            index += 1
            return
        }
        while true {
            try item(&self)
            skipWhitespace()
            guard current == UInt8(ascii: ",") else { return try expect(closing) }
            index += 1
        }
    }

    private mutating func array() throws -> JSONValue {
        var elements: [JSONValue] = []
        try items(closing: UInt8(ascii: "]")) { elements.append(try $0.value()) }
        return .array(elements)
    }

    private mutating func object() throws -> JSONValue {
        var members: [String: JSONValue] = [:]
        try items(closing: UInt8(ascii: "}")) { parser in
            parser.skipWhitespace()
            guard parser.current == UInt8(ascii: "\"") else { throw Failure() }
            let key = try parser.string()
            parser.skipWhitespace()
            try parser.expect(UInt8(ascii: ":"))
            members[key] = try parser.value()
        }
        return .object(members)
    }

    /// A string from its opening quote: runs without escapes are copied whole.
    private mutating func string() throws -> String {
        index += 1
        let start = index
        // The common case: no escape before the closing quote.
        while let byte = current, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
            guard byte >= 0x20 else { throw Failure() }
            index += 1
        }
        guard let stop = current else { throw Failure() }
        if stop == UInt8(ascii: "\"") {
            index += 1
            return try Self.text(UnsafeBufferPointer(rebasing: bytes[start..<index - 1]))
        }
        var text = Array(bytes[start..<index])
        while let byte = current {
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return try Self.text(text)
            case UInt8(ascii: "\\"):
                try escape(into: &text)
            case 0..<0x20:
                throw Failure()
            default:
                text.append(byte)
            }
        }
        throw Failure()
    }

    /// A string's bytes as text: JSON text is UTF-8 (RFC 8259 §8.1), so invalid UTF-8 is refused,
    /// not repaired.
    private static func text(_ bytes: some Collection<UInt8>) throws -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw Failure() }
        return text
    }

    /// One escape after its backslash, appended as UTF-8.
    private mutating func escape(into text: inout [UInt8]) throws {
        guard let byte = current else { throw Failure() }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(byte)
        case UInt8(ascii: "b"): text.append(0x08)
        case UInt8(ascii: "f"): text.append(0x0C)
        case UInt8(ascii: "n"): text.append(0x0A)
        case UInt8(ascii: "r"): text.append(0x0D)
        case UInt8(ascii: "t"): text.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800..<0xDC00).contains(scalar) {
                // A high surrogate must be followed by an escaped low one; a lone one is U+FFFD.
                if bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                    let mark = index
                    index += 2
                    let low = try hex4()
                    if (0xDC00..<0xE000).contains(low) {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else {
                        index = mark
                        scalar = 0xFFFD
                    }
                } else {
                    scalar = 0xFFFD
                }
            } else if (0xDC00..<0xE000).contains(scalar) {
                scalar = 0xFFFD
            }
            text.append(contentsOf: String(Character(Unicode.Scalar(scalar) ?? "\u{FFFD}")).utf8)
        default:
            throw Failure()
        }
    }

    private mutating func hex4() throws -> UInt32 {
        guard bytes.count - index >= 4 else { throw Failure() }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw Failure()
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// A number: an integer when it has no fraction or exponent and fits 64 bits, else a double.
    private mutating func number() throws -> JSONValue {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { throw Failure() }
        if first == UInt8(ascii: "0") {
            index += 1
        } else {
            skipDigits()
        }
        var isInteger = true
        if current == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard skipRequiredDigits() else { throw Failure() }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard skipRequiredDigits() else { throw Failure() }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .integer(integer) }
        guard let double = Double(text), double.isFinite else { throw Failure() }
        return .double(double)
    }

    private mutating func skipDigits() {
        while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { index += 1 }
    }

    private mutating func skipRequiredDigits() -> Bool {
        let start = index
        skipDigits()
        return index > start
    }
}
