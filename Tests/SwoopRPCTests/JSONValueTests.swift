import Foundation
import SwoopRPC
import Testing

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
}
