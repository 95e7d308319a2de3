import Foundation
import Testing

@testable import SwoopKit

@Suite("RecordTable: the in-memory store's records and their indexes")
struct RecordTableTests {
    static func record(
        _ id: String, url: String = "http://h/f", directory: String = "/d", requestedName: String = "",
        fileName: String? = nil, state: Download.State = .waiting
    ) -> DownloadRecord {
        var record = DownloadRecord(id: Download.ID(id), url: url, directory: directory, requestedName: requestedName, bootID: "b")
        record.fileName = fileName
        record.state = state
        return record
    }

    static func key(_ url: String, _ directory: String = "/d", _ requestedName: String = "") -> DownloadKey {
        DownloadKey(url: url, directory: directory, requestedName: requestedName)
    }

    @Test func findsByKeyOnlyTheRecordAskedForThatWay() {
        var table = RecordTable()
        table[Download.ID("a")] = Self.record("a", url: "http://h/a")
        table[Download.ID("b")] = Self.record("b", url: "http://h/a", requestedName: "other.bin")
        table[Download.ID("c")] = Self.record("c", url: "http://h/a", directory: "/e")
        #expect(table.record(for: Self.key("http://h/a"))?.id == Download.ID("a"))
        #expect(table.record(for: Self.key("http://h/a", "/d", "other.bin"))?.id == Download.ID("b"))
        #expect(table.record(for: Self.key("http://h/a", "/e"))?.id == Download.ID("c"))
        #expect(table.record(for: Self.key("http://h/b")) == nil)
    }

    @Test func aRecordMovedToAnotherURLIsFoundUnderItsNewKeyOnly() {
        var table = RecordTable()
        table[Download.ID("a")] = Self.record("a", url: "http://h/old")
        table[Download.ID("a")]?.url = "http://h/new"
        #expect(table.record(for: Self.key("http://h/old")) == nil)
        #expect(table.record(for: Self.key("http://h/new"))?.id == Download.ID("a"))
    }

    @Test func findsTheUnfinishedDownloadThatNamesAFileInADirectory() {
        var table = RecordTable()
        table[Download.ID("done")] = Self.record("done", fileName: "f.bin", state: .completed)
        table[Download.ID("gone")] = Self.record("gone", fileName: "f.bin", state: .removed)
        #expect(table.unfinished(directory: "/d", fileName: "f.bin") == nil)
        table[Download.ID("elsewhere")] = Self.record("elsewhere", directory: "/e", fileName: "f.bin")
        table[Download.ID("unnamed")] = Self.record("unnamed")
        #expect(table.unfinished(directory: "/d", fileName: "f.bin") == nil)
        table[Download.ID("paused")] = Self.record("paused", fileName: "f.bin", state: .paused)
        #expect(table.unfinished(directory: "/d", fileName: "f.bin")?.id == Download.ID("paused"))
        #expect(table.unfinished(directory: "/e", fileName: "f.bin")?.id == Download.ID("elsewhere"))
    }

    @Test func aStateChangeIsSeenWithoutReindexing() {
        var table = RecordTable()
        table[Download.ID("a")] = Self.record("a", fileName: "f.bin", state: .active)
        #expect(table.unfinished(directory: "/d", fileName: "f.bin")?.id == Download.ID("a"))
        table[Download.ID("a")]?.state = .completed
        #expect(table.unfinished(directory: "/d", fileName: "f.bin") == nil)
        table[Download.ID("a")]?.state = .failed
        #expect(table.unfinished(directory: "/d", fileName: "f.bin")?.id == Download.ID("a"))
    }

    @Test func aRenamedOrUnnamedFileLeavesItsOldName() {
        var table = RecordTable()
        table[Download.ID("a")] = Self.record("a", fileName: "f.bin")
        table[Download.ID("a")]?.fileName = "f.1.bin"
        #expect(table.unfinished(directory: "/d", fileName: "f.bin") == nil)
        #expect(table.unfinished(directory: "/d", fileName: "f.1.bin")?.id == Download.ID("a"))
        table[Download.ID("a")]?.fileName = nil
        #expect(table.unfinished(directory: "/d", fileName: "f.1.bin") == nil)
        #expect(table[Download.ID("a")] != nil)
    }

    @Test func aRemovedRecordIsInNoIndex() {
        var table = RecordTable()
        table[Download.ID("a")] = Self.record("a", url: "http://h/a", fileName: "a.bin")
        table[Download.ID("b")] = Self.record("b", url: "http://h/b", fileName: "b.bin")
        #expect(table.removeValue(forKey: Download.ID("a"))?.id == Download.ID("a"))
        #expect(table.removeValue(forKey: Download.ID("a")) == nil)
        table[Download.ID("b")] = nil
        #expect(table.record(for: Self.key("http://h/a")) == nil)
        #expect(table.unfinished(directory: "/d", fileName: "a.bin") == nil)
        #expect(table.record(for: Self.key("http://h/b")) == nil)
        #expect(table.unfinished(directory: "/d", fileName: "b.bin") == nil)
        #expect(table.values.isEmpty)
    }

    /// Many records: each lookup answers from its index (the table must agree with a scan).
    @Test func agreesWithAScanOfEveryRecord() {
        var table = RecordTable()
        var all: [DownloadRecord] = []
        for index in 0..<3_000 {
            let states: [Download.State] = [.waiting, .active, .completed, .removed, .failed]
            let record = Self.record(
                "r\(index)", url: "http://h/\(index % 1_000)", directory: "/d\(index % 3)",
                fileName: index % 7 == 0 ? nil : "f\(index % 500).bin", state: states[index % states.count]
            )
            table[record.id] = record
            all.append(record)
        }
        for index in stride(from: 0, to: 1_000, by: 37) {
            for directory in ["/d0", "/d1", "/d2"] {
                let key = Self.key("http://h/\(index)", directory)
                #expect(table.record(for: key)?.key == all.first { $0.key == key }?.key)
                let name = "f\(index % 500).bin"
                let scanned = all.contains { $0.directory == directory && $0.fileName == name && $0.state != .completed && $0.state != .removed }
                let found = table.unfinished(directory: directory, fileName: name)
                #expect((found != nil) == scanned)
                #expect(found.map { $0.directory == directory && $0.fileName == name } ?? true)
            }
        }
    }
}
