import Foundation
import Testing

@testable import SwoopKit

/// Moving a download to another URL: which saved bytes may be offered to it.
@Suite("SourceChange")
struct SourceChangeTests {
    static func record(etag: String? = nil, lastModified: String? = nil, total: Int? = 1000, committed: Int = 400) -> DownloadRecord {
        var record = DownloadRecord(url: "http://a/f.bin?sig=1", directory: "/tmp", requestedName: "", bootID: "b")
        (record.etag, record.lastModified, record.totalBytes, record.committedBytes, record.syncedBytes) = (etag, lastModified, total, committed, committed)
        record.fileName = "f.bin"
        record.state = .interrupted
        return record
    }

    @Test func aStrongETagKeepsTheBytesForTheNewURLToProve() {
        var record = Self.record(etag: "\"e\"")
        #expect(SourceChange.move(&record, to: "http://a/f.bin?sig=2", requestedName: "f.bin", trustLength: false) == nil)
        #expect((record.url, record.requestedName, record.committedBytes, record.etag) == ("http://a/f.bin?sig=2", "f.bin", 400, "\"e\""))
        // The record names where the bytes came from until the new URL proves it (stored: it
        // outlives the process); moved again unproven, they still came from the first URL.
        #expect(record.movedFrom == "http://a/f.bin?sig=1")
        _ = SourceChange.move(&record, to: "http://a/f.bin?sig=3", requestedName: "f.bin", trustLength: false)
        #expect(record.movedFrom == "http://a/f.bin?sig=1")
        // Starting over, nothing is owed.
        var weak = Self.record(etag: "W/\"e\"")
        weak.movedFrom = "http://earlier"
        #expect(SourceChange.move(&weak, to: "http://b/f.bin", requestedName: "", trustLength: false) != nil)
        #expect(weak.movedFrom == nil)
    }

    @Test(arguments: [false, true])
    func lastModifiedAndLengthKeepTheBytesOnlyWhenTrusted(trust: Bool) {
        var record = Self.record(lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")
        let reason = SourceChange.move(&record, to: "http://b/f.bin", requestedName: "", trustLength: trust)
        #expect((reason == nil) == trust)
        #expect(record.committedBytes == (trust ? 400 : 0))
        #expect(record.fileName == "f.bin")
        // The old server's weak ETag says nothing of the new one's: dropped, so that a later
        // resume is not refused for comparing it with the new server's.
        var weak = Self.record(etag: "W/\"old\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT")
        _ = SourceChange.move(&weak, to: "http://b/f.bin", requestedName: "", trustLength: trust)
        #expect(weak.etag == nil)
    }

    @Test func aWeakETagOrNoValidatorStartsOverKeepingTheFileName() {
        for var record in [Self.record(etag: "W/\"e\""), Self.record(total: nil)] {
            let reason = SourceChange.move(&record, to: "http://b/f.bin", requestedName: "", trustLength: true)
            #expect(reason?.hasPrefix("http://a/f.bin?sig=1 gave ") == true)
            #expect((record.committedBytes, record.syncedBytes, record.totalBytes, record.etag, record.segments) == (0, 0, nil, nil, nil))
            #expect(record.partPath == "/tmp/f.bin.swoop")
        }
        // Nothing saved: nothing to lose, nothing to say.
        var fresh = Self.record(committed: 0)
        #expect(SourceChange.move(&fresh, to: "http://b/f.bin", requestedName: "", trustLength: false) == nil)
    }

    /// What was asked of one server (headers that may carry its credentials, its mirrors) does not
    /// follow the download to another; a re-signed link on the same host keeps them.
    @Test func anotherHostGetsNoneOfTheStoredHeadersOrMirrors() {
        var record = Self.record(etag: "\"e\"")
        record.headers = [HTTPHeaderField(name: "Authorization", value: "Bearer secret")]
        record.mirrors = ["http://m/f.bin"]
        var same = record
        _ = SourceChange.move(&same, to: "http://a/f.bin?sig=2", requestedName: "", trustLength: false)
        #expect(same.headers.count == 1 && same.mirrors.count == 1)
        var other = record
        _ = SourceChange.move(&other, to: "http://b/f.bin", requestedName: "", trustLength: false)
        #expect(other.headers.isEmpty && other.mirrors.isEmpty)
        #expect(other.committedBytes == 400)
        // The same host over another scheme or port is another origin: a secret sent over https
        // does not follow to http.
        var secure = record
        secure.url = "https://a/f.bin?sig=1"
        for url in ["http://a/f.bin?sig=2", "https://a:8443/f.bin?sig=2"] {
            var moved = secure
            _ = SourceChange.move(&moved, to: url, requestedName: "", trustLength: false)
            #expect(moved.headers.isEmpty && moved.mirrors.isEmpty, "\(url)")
        }
        var explicitPort = secure
        _ = SourceChange.move(&explicitPort, to: "https://A:443/f.bin?sig=2", requestedName: "", trustLength: false)
        #expect(explicitPort.headers.count == 1 && explicitPort.mirrors.count == 1)
    }
}
