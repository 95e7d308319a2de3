import Foundation
import Testing

@testable import SwoopRPC

@Suite("JSONValue: read leniently, written exactly")
struct JSONValueTests {
    @Test func writtenTextIsJSONThatReadsBackTheSame() throws {
        let tricky = "quote \" backslash \\ slash / newline \n tab \t cr \r bell \u{07} nul \u{00} é 漢 🦊 \u{1F}"
        let value: JSONValue = [
            "s": .string(tricky), "i": .integer(-9_007_199_254_740_993), "d": .double(1.5), "b": true, "n": nil,
            "a": [1, "two", [:], []], "o": ["z": 1, "a": 2],
        ]
        let text = value.serialized()
        #expect(JSONValue.parse(text) == value)
        // Another parser agrees on the string.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text)) as? [String: Any])
        #expect(object["s"] as? String == tricky)
        // Keys are sorted, the output compact; control characters are escaped.
        #expect(String(decoding: JSONValue.object(["b": 1, "a": [true, nil]]).serialized(), as: UTF8.self) == #"{"a":[true,null],"b":1}"#)
        #expect(String(decoding: JSONValue.string("\u{01}\n").serialized(), as: UTF8.self) == #""\u0001\n""#)
    }

    @Test func numbersKeepTheirKind() {
        #expect(JSONValue.parse(Array("7".utf8)) == .integer(7))
        #expect(JSONValue.parse(Array("7.25".utf8)) == .double(7.25))
        #expect(JSONValue.parse(Array("\"7\"".utf8)) == .string("7"))
        #expect(JSONValue.parse(Array("{".utf8)) == nil)
    }

    /// The parser agrees with Foundation's on what is JSON and what it says, and refuses what RFC
    /// 8259 does.
    @Test(arguments: [
        #"{"jsonrpc":"2.0","id":1,"method":"aria2.tellActive","params":["token:s",["gid","status"]]}"#,
        #" [ 1 , -0 , 2.5e3 , -1E-2 , 9223372036854775807 , -9223372036854775808 , 9223372036854775808 ] "#,
        #"{"a":{"b":[{},[],null,true,false]},"é":"\u00e9\ud83e\udd8a\n\t\"\\\/\b\f\r"}"#,
        #""plain""#, "0", "-12", "1.5", "true", "null", #"{"k":1,"k":2}"#,
    ])
    func parsesWhatFoundationParses(text: String) throws {
        let parsed = try #require(JSONValue.parse(Array(text.utf8)))
        let reference = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
        #expect(Self.same(parsed, reference), "\(parsed) vs \(reference)")
    }

    @Test(arguments: [
        "", " ", "{", "[1,]", #"{"a":1,}"#, "[1 2]", "01", "1.", ".5", "-", "1e", "+1", "NaN", "tru", "nulll",
        #"{'a':1}"#, #"{"a" 1}"#, #"{1:2}"#, "\"a\u{01}\"", "\"tab\tinside\"",
        #""\x""#, #""\u12""#, #""unterminated"#, "[] []", "1e999", "// c\n1",
    ])
    func refusesWhatIsNotJSON(text: String) {
        #expect(JSONValue.parse(Array(text.utf8)) == nil, "\(text)")
    }

    /// JSON text is UTF-8: a string with bytes that are not is refused, not repaired.
    @Test func invalidUTF8IsRefused() {
        #expect(JSONValue.parse([0x22, 0xFF, 0x22]) == nil)
        #expect(JSONValue.parse([0x22, 0x5C, 0x6E, 0xC3, 0x22]) == nil)
        #expect(JSONValue.parse([0x22, 0xC3, 0xA9, 0x22]) == .string("é"))
    }

    /// Deep nesting stops at the limit instead of exhausting the stack (a 1 MiB body could hold
    /// 500,000 brackets).
    @Test func nestingIsBounded() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(JSONValue.parse(Array(deep.utf8)) == nil)
        let fine = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
        #expect(JSONValue.parse(Array(fine.utf8)) != nil)
    }

    /// A lone surrogate escape reads as U+FFFD, as Foundation's parser reads it.
    @Test func loneSurrogatesAreReplaced() {
        #expect(JSONValue.parse(Array(#""\ud800x""#.utf8)) == .string("\u{FFFD}x"))
        #expect(JSONValue.parse(Array(#""\udc00""#.utf8)) == .string("\u{FFFD}"))
    }

    /// Written text is put out as it is and reads back as the values it holds.
    @Test func rawTextIsWrittenAsItIs() {
        let raw = JSONValue.raw(JSONText(bytes: Array(#"{"z":1,"a":"2"}"#.utf8)))
        let text = JSONValue.array([raw, 3]).serialized()
        #expect(String(decoding: text, as: UTF8.self) == #"[{"z":1,"a":"2"},3]"#)
        #expect(JSONValue.parse(text) == [["z": 1, "a": "2"], 3])
    }

    /// Numbers written as aria2's decimal strings, digit by digit, at the edges too; strings that
    /// need escaping and strings that do not, between commas where they belong.
    @Test func theWriterPutsNumbersAndStringsAsJSON() {
        var out = JSONWriter()
        out.beginObject()
        out.key("n")
        out.beginArray()
        for number in [0, 7, -7, 10, 1_000_000, Int.max, Int.min] { out.decimal(number) }
        out.endArray()
        out.key("s")
        out.string("plain")
        out.key("e")
        out.string("quo\"te\n")
        out.endObject()
        let text = String(decoding: out.finish().serialized(), as: UTF8.self)
        #expect(text == #"{"n":["0","7","-7","10","1000000","9223372036854775807","-9223372036854775808"],"s":"plain","e":"quo\"te\n"}"#)
    }

    static func same(_ value: JSONValue, _ reference: Any) -> Bool {
        switch value {
        case .null: return reference is NSNull
        case .bool(let bool): return (reference as? Bool) == bool
        case .integer(let integer): return (reference as? NSNumber)?.int64Value == integer
        case .double(let double): return (reference as? NSNumber)?.doubleValue == double
        case .string(let string): return reference as? String == string
        case .array(let elements):
            guard let others = reference as? [Any], others.count == elements.count else { return false }
            return zip(elements, others).allSatisfy { same($0, $1) }
        case .object(let members):
            guard let others = reference as? [String: Any], others.count == members.count else { return false }
            return members.allSatisfy { key, member in others[key].map { same(member, $0) } ?? false }
        case .raw: return false
        }
    }
}
