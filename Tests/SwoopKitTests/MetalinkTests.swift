import Foundation
import Testing

@testable import SwoopKit

@Suite("Metalink and TAB-separated mirrors")
struct MetalinkTests {
    @Test func rfc5854FilesWithPriorityAndTheStrongestHash() throws {
        let xml = """
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="a.iso"><size>10</size>
                <hash type="md5">\(String(repeating: "a", count: 32))</hash>
                <hash type="sha-256">\(String(repeating: "b", count: 64))</hash>
                <url priority="5">http://two/a.iso</url><url priority="1">http://one/a.iso</url><url>http://three/a.iso</url>
                <metaurl mediatype="torrent">http://t/a.torrent</metaurl>
              </file>
              <file name="b.bin"><url>https://b/b.bin</url></file>
              <file name="empty.bin"></file>
            </metalink>
            """
        let files = try Metalink.parse(Data(xml.utf8), source: "x.meta4")
        #expect(files.map(\.name) == ["a.iso", "b.bin"])
        #expect(files[0].urls == ["http://one/a.iso", "http://two/a.iso", "http://three/a.iso"])
        #expect(files[0].size == 10)
        #expect(files[0].checksum?.description == "sha-256=" + String(repeating: "b", count: 64))
        #expect(files[1].checksum == nil)
    }

    @Test func metalink3PreferenceAndHashNames() throws {
        let xml = """
            <metalink version="3.0" xmlns="http://www.metalinker.org/"><files><file name="c.tar">
              <verification><hash type="sha1">\(String(repeating: "c", count: 40))</hash></verification>
              <resources><url type="http" preference="10">http://low/c.tar</url><url type="http" preference="100">http://high/c.tar</url></resources>
            </file></files></metalink>
            """
        let files = try Metalink.parse(Data(xml.utf8), source: "c.metalink")
        #expect(files.first?.urls == ["http://high/c.tar", "http://low/c.tar"])
        #expect(files.first?.checksum?.description == "sha-1=" + String(repeating: "c", count: 40))
    }

    /// Preferences out of Metalink 3.0's 0-100 are clamped: -9223372036854775808 trapped the rank.
    @Test func preferencesOutOfRangeAreClampedNotATrap() throws {
        let xml = """
            <metalink version="3.0" xmlns="http://www.metalinker.org/"><files><file name="d.bin"><resources>
              <url type="http" preference="-9223372036854775808">http://least/d.bin</url>
              <url type="http" preference="50">http://middle/d.bin</url>
              <url type="http" preference="9223372036854775807">http://most/d.bin</url>
            </resources></file></files></metalink>
            """
        let files = try Metalink.parse(Data(xml.utf8), source: "d.metalink")
        #expect(files.first?.urls == ["http://most/d.bin", "http://middle/d.bin", "http://least/d.bin"])
    }

    @Test func errorsNameTheFile() {
        let notXML = #expect(throws: SwoopError.self) { try Metalink.parse(Data("not xml <".utf8), source: "m.meta4") }
        #expect(notXML?.message.hasPrefix("cannot read Metalink m.meta4") == true)
        let none = #expect(throws: SwoopError.self) { try Metalink.parse(Data("<metalink/>".utf8), source: "m.meta4") }
        #expect(none?.message == "Metalink m.meta4 names no file with a URL")
    }

    @Test func aListLineWithTabsIsOneFileWithMirrors() {
        let entries = URLList.parse("http://a/f.iso\thttp://b/f.iso\thttp://c/f.iso\tmy f.iso\nhttp://d/g.iso\th.iso\nhttp://e/x  y.bin\n")
        #expect(entries.count == 3)
        #expect(entries[0] == URLList.Entry(url: "http://a/f.iso", fileName: "my f.iso", line: 1, mirrors: ["http://b/f.iso", "http://c/f.iso"]))
        // One URL then a TAB and a name: a name, as before.
        #expect(entries[1] == URLList.Entry(url: "http://d/g.iso", fileName: "h.iso", line: 2))
        #expect(entries[2] == URLList.Entry(url: "http://e/x", fileName: "y.bin", line: 3))

        // A name after spaces in the last URL's field; a first field with spaces is the plain form.
        let spaced = URLList.parse("http://a/f\thttp://b/f  my f\nhttp://a/f  name\thttp://b/f\n")
        #expect(spaced[0] == URLList.Entry(url: "http://a/f", fileName: "my f", line: 1, mirrors: ["http://b/f"]))
        #expect(spaced[1] == URLList.Entry(url: "http://a/f", fileName: "name\thttp://b/f", line: 2))
    }
}
