/// A JSON value as JSON-RPC carries it: ids of any type echoed as they came, parameters read
/// leniently (aria2 ignores option values that are not strings), results built without a type
/// per method.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number without fraction or exponent that fits 64 bits.
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
    /// JSON text already written, put out as it is: a list of 1,000 statuses is written straight
    /// to bytes (see ``Aria2Status/json(_:)``), not built as 20,000 values first. Its accessors
    /// give `nil`; `parse(serialized())` reads it back as values.
    case raw(JSONText)

    /// The string, for a string value.
    public var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The integer, for an integer value (a number with a fraction is not one).
    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The elements, for an array.
    public var array: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// The members, for an object.
    public var object: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// A number as aria2 sends every number: a decimal string.
    public static func decimal(_ value: some BinaryInteger) -> JSONValue {
        .string(String(value))
    }
}

extension JSONValue {
    /// Parses JSON text (see ``JSONParser``); `nil` when it is not one JSON value.
    public static func parse(_ bytes: some Collection<UInt8>) -> JSONValue? {
        JSONParser.parse(bytes)
    }

    /// The value as compact JSON text (keys sorted, so equal values give equal text; raw text as
    /// it was written). Written byte by byte: `JSONEncoder` (a container per value) takes several
    /// times longer.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out)
        return out
    }

    func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .integer(let value): out.append(contentsOf: String(value).utf8)
        case .double(let value): out.append(contentsOf: (value.isFinite ? "\(value)" : "null").utf8)
        case .string(let value): Self.write(string: value, to: &out)
        case .raw(let text): out.append(contentsOf: text.bytes)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.write(string: member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A JSON string (RFC 8259): quotes, backslashes and control characters escaped, the rest as
    /// UTF-8.
    static func write(string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings (ids, numbers, paths, URLs) need no escape: copied whole.
        let copied = string.utf8.withContiguousStorageIfAvailable { text -> Bool in
            for byte in text where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
            out.append(contentsOf: text)
            return true
        }
        if copied == true {
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral, ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

/// JSON text written ahead (``JSONValue/raw(_:)``), compared byte for byte.
public struct JSONText: Sendable, Hashable {
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }
}

/// Writes JSON text straight to bytes, value after value, with the commas between them: an
/// object whose keys are known needs no dictionary built, hashed and sorted first.
struct JSONWriter {
    private var bytes: [UInt8] = []
    /// Whether a value was written at this level, so the next one is preceded by a comma.
    private var afterValue = false

    init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    private mutating func separate() {
        if afterValue { bytes.append(UInt8(ascii: ",")) }
    }

    mutating func beginObject() { open(UInt8(ascii: "{")) }
    mutating func endObject() { close(UInt8(ascii: "}")) }
    mutating func beginArray() { open(UInt8(ascii: "[")) }
    mutating func endArray() { close(UInt8(ascii: "]")) }

    private mutating func open(_ bracket: UInt8) {
        separate()
        bytes.append(bracket)
        afterValue = false
    }

    private mutating func close(_ bracket: UInt8) {
        bytes.append(bracket)
        afterValue = true
    }

    /// An object member's key: this module's own names, which need no escaping.
    mutating func key(_ name: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: name.utf8)
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        afterValue = false
    }

    mutating func string(_ text: String) {
        separate()
        JSONValue.write(string: text, to: &bytes)
        afterValue = true
    }

    /// A number as aria2 sends every number: a decimal string.
    mutating func decimal(_ number: Int) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        // Digits from the last, into a small buffer: `description` goes through generic code.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var rest = number.magnitude
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
        bytes.append(UInt8(ascii: "\""))
        afterValue = true
    }

    /// What was written, as a value to put out as it is.
    consuming func finish() -> JSONValue {
        .raw(JSONText(bytes: bytes))
    }
}
