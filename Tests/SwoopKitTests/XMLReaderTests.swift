import Testing

@testable import SwoopKit

@Suite("XMLReader (Metalink's XML)")
struct XMLReaderTests {
    private func events(_ text: String) throws(XMLReader.Failure) -> [XMLReader.Event] {
        try XMLReader.events(of: Array(text.utf8))
    }

    private func failure(_ text: String) -> XMLReader.Failure? {
        do {
            _ = try events(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func elementsAttributesAndText() throws {
        let document = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- a comment --><!DOCTYPE metalink>
            <ml:root xmlns:ml="urn:x" a='1' b = "two words"><empty/><t>x &amp; y &lt;&gt; &quot;&apos; &#233;&#x20AC;</t>
            <c><![CDATA[<not> & markup]]></c></ml:root>
            """
        #expect(
            try events(document) == [
                .start(name: "ml:root", attributes: ["xmlns:ml": "urn:x", "a": "1", "b": "two words"]),
                .start(name: "empty", attributes: [:]), .end(name: "empty"),
                .start(name: "t", attributes: [:]), .text("x & y <> \"' é€"), .end(name: "t"),
                .text("\n"),
                .start(name: "c", attributes: [:]), .text("<not> & markup"), .end(name: "c"),
                .end(name: "ml:root"),
            ]
        )
        // A byte-order mark is skipped.
        #expect(try XMLReader.events(of: [0xEF, 0xBB, 0xBF] + Array("<a/>".utf8)) == [.start(name: "a", attributes: [:]), .end(name: "a")])
        // Entities in attribute values too.
        #expect(try events("<a href=\"x?a=1&amp;b=2\"/>").first == .start(name: "a", attributes: ["href": "x?a=1&b=2"]))
    }

    @Test(arguments: [
        ("not xml <", 1, "text outside the root element"),
        ("", 1, "no root element"),
        ("<a><b></a>", 1, "</a> closes <b>"),
        ("<a>\n<b>\n</b>", 3, "<a> is not closed"),
        ("<a/><b/>", 1, "a second root element <b>"),
        ("<a x=1/>", 1, "the value of x in <a> is not quoted"),
        ("<a x='1' x='2'/>", 1, "x given twice in <a>"),
        ("<a x='<'/>", 1, "< in the value of x"),
        ("<a>&nbsp;</a>", 1, "unknown entity &nbsp;"),
        ("<a>&#0;</a>", 1, "&#0; is not a character"),
        ("<a>&#xD800;</a>", 1, "&#xD800; is not a character"),
        ("<a>& b</a>", 1, "an & that starts no reference"),
        ("<a><!-- open</a>", 1, "--> is missing"),
        ("<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>", 1, "a document type with declarations is not supported"),
        ("<?xml version='1.0' encoding='Shift_JIS'?><a/>", 1, "encoding Shift_JIS is not supported (UTF-8 or ISO-8859-1)"),
        ("<1a/>", 1, "expected a name"),
        ("<a b='1'c='2'/>", 1, "expected a space, > or /> in <a>"),
        ("<a>&#+65;</a>", 1, "&#+65; is not a character"),
        ("<a>&#x1;</a>", 1, "&#x1; is not a character"),
        // The line of the fault, not of the element around it.
        ("<a>\n\n &nbsp;</a>", 3, "unknown entity &nbsp;"),
        ("<a/>\n\nfoo", 3, "text outside the root element"),
        // Cut short anywhere: refused, never a crash.
        ("<", 1, "expected a name"),
        ("<a", 1, "expected a space, > or /> in <a>"),
        ("<a x", 1, "expected = after x in <a>"),
        ("<a x=", 1, "the value of x in <a> is not quoted"),
        ("<a x='", 1, "the value of x is not closed"),
        ("</", 1, "expected a name"),
        ("<!", 1, "expected a name"),
        ("<?", 1, "?> is missing"),
        ("<a><![CDATA[", 1, "]]> is missing"),
    ])
    func refusesWhatIsNotWellFormed(document: String, line: Int, reason: String) {
        #expect(failure(document) == XMLReader.Failure(line: line, reason: reason))
    }

    @Test func encodings() throws {
        #expect(throws: XMLReader.Failure(line: 1, reason: "not UTF-8")) { try XMLReader.events(of: Array("<a>".utf8) + [0xFF] + Array("</a>".utf8)) }
        #expect(throws: XMLReader.Failure(line: 1, reason: "UTF-16 is not supported (UTF-8 or ISO-8859-1)")) { try XMLReader.events(of: [0xFF, 0xFE, 0x3C, 0x00]) }
        #expect(try events("<?xml version=\"1.0\" encoding=\"US-ASCII\"?><a>x</a>") == [.start(name: "a", attributes: [:]), .text("x"), .end(name: "a")])
        // ISO-8859-1: each byte is the character of that number (é is 0xE9).
        let latin1 = Array("<?xml version='1.0' encoding='ISO-8859-1'?><a n='".utf8) + [0xE9] + Array("'/>".utf8)
        #expect(try XMLReader.events(of: latin1).first == .start(name: "a", attributes: ["n": "é"]))
    }
}
