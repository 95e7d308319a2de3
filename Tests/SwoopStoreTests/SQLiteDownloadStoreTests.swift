import Foundation
import SwoopKit
import SwoopTesting
import Testing

import GRDB
import Synchronization

@testable import SwoopStore

@Suite("SQLite store")
struct SQLiteDownloadStoreTests {
    let directory: String

    init() throws {
        directory = scratchPath("swoop-store")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func record(_ url: String = "http://127.0.0.1/a.bin", name: String = "") -> DownloadRecord {
        var record = DownloadRecord(url: url, directory: "/tmp/x", requestedName: name, bootID: "boot-1", checksum: "md5=00")
        record.fileName = "a.bin"
        record.totalBytes = 1000
        record.etag = "\"v1\""
        record.lastModified = "Sun, 06 Nov 1994 08:49:37 GMT"
        return record
    }

    /// Two processes opening a new state database at once (two `swoop get` started together on a
    /// fresh state directory): both open it. Each used to switch it to WAL ("database is locked")
    /// and make its tables ("table download already exists"), and one of them failed.
    @Test func twoOpeningANewDatabaseAtOnceBothOpenIt() throws {
        for round in 0..<20 {
            let directory = self.directory + "/\(round)"
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                do {
                    _ = try SQLiteDownloadStore(directory: directory)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 } == [], "round \(round)")
        }
    }

    /// Two processes adding the same URL at once: the second batch, read before the first was
    /// saved, fails whole with a retryable error (read again, reuse the other's record), not a
    /// plain store failure that ends the command.
    @Test func aBatchWhoseKeyAnotherProcessAddedMeanwhileFailsRetryably() throws {
        let first = try SQLiteDownloadStore(directory: directory)
        let second = try SQLiteDownloadStore(directory: directory)
        let mine = record("http://127.0.0.1/same.bin")
        let theirs = record("http://127.0.0.1/same.bin")
        #expect(try second.find([mine.key]).isEmpty)
        try first.save(contentsOf: [theirs])
        do {
            try second.save(contentsOf: [record("http://127.0.0.1/other.bin"), mine])
            Issue.record("a second record of one key was saved")
        } catch let error as SwoopError {
            #expect(error.code == .store && error.isRetryable, "\(error)")
            #expect(error.message.hasPrefix("another swoop process added some of these downloads meanwhile"), "\(error.message)")
        }
        #expect(try second.find([mine.key]).map(\.id) == [theirs.id])
        #expect(try second.all().count == 1)
    }

    @Test func recordsSurviveReopeningTheDatabase() throws {
        let original = record()
        do {
            let store = try SQLiteDownloadStore(directory: directory)
            try store.save(original)
            try store.checkpoint(id: original.id, committedBytes: 600, syncedBytes: 400, bootID: "boot-2", bytesPerSecond: 0)
        }
        let reopened = try SQLiteDownloadStore(directory: directory)
        let found = try #require(try reopened.find(url: original.url, directory: "/tmp/x", requestedName: ""))
        #expect(found.id == original.id)
        #expect(found.committedBytes == 600)
        #expect(found.syncedBytes == 400)
        #expect(found.bootID == "boot-2")
        #expect(found.etag == "\"v1\"")
        #expect(found.lastModified == original.lastModified)
        #expect(found.totalBytes == 1000)
        #expect(found.fileName == "a.bin")
        #expect(found.checksum == "md5=00")
        #expect(try reopened.record(id: original.id)?.url == original.url)
    }

    @Test func lookupKeyIsURLDirectoryAndRequestedName() throws {
        let store = try SQLiteDownloadStore(directory: directory)
        try store.save(record(name: ""))
        try store.save(record(name: "other.bin"))
        #expect(try store.all().count == 2)
        #expect(try store.find(url: "http://127.0.0.1/a.bin", directory: "/tmp/x", requestedName: "other.bin") != nil)
        #expect(try store.find(url: "http://127.0.0.1/a.bin", directory: "/tmp/y", requestedName: "") == nil)
    }

    @Test func duplicateKeyIsRejectedNotDuplicated() throws {
        let store = try SQLiteDownloadStore(directory: directory)
        try store.save(record())
        #expect(throws: SwoopError.self) { try store.save(record()) }
        #expect(try store.all().count == 1)
    }

    /// A batch whose key another record took meanwhile fails whole and retryably (`keyTaken`):
    /// the constraint's extended code reaches the store through the statement's own binding and
    /// stepping (`Database.run`), and the record is not written twice.
    @Test func aBatchWithATakenKeyFailsRetryably() throws {
        let store = try SQLiteDownloadStore(directory: directory)
        try store.save(record())
        let error = #expect(throws: SwoopError.self) { try store.save(contentsOf: [record("http://127.0.0.1/b.bin"), record()]) }
        #expect(error?.isRetryable == true)
        #expect(error?.message.hasPrefix("another swoop process added some of these downloads meanwhile") == true)
        #expect(try store.all().map(\.url) == [record().url])
    }

    @Test func batchesRoundTripEveryFieldAndUpdateByID() throws {
        let store = try SQLiteDownloadStore(directory: directory)
        var records = (0..<300).map { i -> DownloadRecord in
            var r = record("http://127.0.0.1/\(i).bin")
            r.headers = [HTTPHeaderField(name: "Authorization", value: "Bearer \(i)")]
            r.collisionPolicy = .overwrite
            r.priority = i % 3
            r.position = i
            r.bytesPerSecond = 12.5
            r.state = .paused
            r.lastError = "e\(i)"
            r.finalSize = i
            r.finalModified = 1.5
            return r
        }
        try store.save(contentsOf: records)
        let keys = records.reversed().map(\.key) + [DownloadKey(url: "http://nope", directory: "/tmp/x", requestedName: "")]
        let found = try store.find(keys)
        #expect(found.map(\.id) == records.reversed().map(\.id))
        for (got, want) in zip(found, records.reversed()) {
            var got = got
            got.createdAt = want.createdAt  // stored as seconds: sub-microsecond rounding
            got.updatedAt = want.updatedAt
            #expect(got == want)
        }
        // Queue order: priority first, then position.
        #expect(try store.all().map(\.position) == records.sorted { ($0.priority, -$0.position) > ($1.priority, -$1.position) }.map(\.position))
        records[0].state = .completed
        try store.save(contentsOf: [records[0]])
        #expect(try store.record(id: records[0].id)?.state == .completed)
        #expect(try store.all().count == 300)
        // A different id with a key already taken fails the batch; nothing of it is written.
        #expect(throws: SwoopError.self) { try store.save(contentsOf: [record("http://127.0.0.1/new.bin"), record("http://127.0.0.1/5.bin")]) }
        #expect(try store.all().count == 300)
        #expect(Set(Row.columns).count == Row.columns.count)
    }

    /// The read each download makes as it starts steps SQLite itself (`Row(sqliteStatement:)`):
    /// it gives every field, set or not, as the stored record has it and as GRDB's reading of the
    /// same row (`find`) does.
    @Test func theReadAtEachStartGivesEveryFieldAsStored() throws {
        let store = try SQLiteDownloadStore(directory: directory)
        var full = exactRecord("http://127.0.0.1/full.bin")
        full.state = .active
        full.committedBytes = 4096
        full.syncedBytes = 2048
        full.finalSize = 5000
        full.finalModified = 1_700_000_001.25
        full.lastError = "connection reset by 127.0.0.1 (ünïcode, \"quoted\")"
        full.lastErrorCode = "network"
        full.movedFrom = "http://127.0.0.1/old.bin"
        full.headers = [HTTPHeaderField(name: "Authorization", value: "Bearer x"), HTTPHeaderField(name: "X-É", value: "é")]
        full.collisionPolicy = .overwrite
        full.priority = -2
        full.position = 1 << 40
        full.bytesPerSecond = 1234.5
        full.segments = [Segment(start: 0, end: 2500, written: 2048, synced: 1024), Segment(start: 2500, end: 5000)]
        full.settings.maxConnections = 4
        full.settings.bytesPerSecond = 1 << 20
        full.mirrors = ["http://127.0.0.1/m1.bin", "http://127.0.0.1/m2.bin"]
        var bare = DownloadRecord(url: "http://127.0.0.1/bare.bin", directory: "/tmp/x", requestedName: "", bootID: "", checksum: nil)
        bare.createdAt = Date(timeIntervalSince1970: 1_700_000_000)
        bare.updatedAt = bare.createdAt
        try store.save(contentsOf: [full, bare])
        for stored in [full, bare] {
            let read = try store.record(id: stored.id)
            #expect(read == stored)
            #expect(read == (try store.find([stored.key]).first))
        }
        #expect(try store.record(id: Download.ID("no-such-download")) == nil)
    }

    /// A row edited on disk with a value of another kind (text where a number belongs) is read as
    /// SQLite converts it: the download starts from what can be read, nothing traps.
    @Test func aRowEditedOnDiskWithTextForANumberIsStillRead() throws {
        let store = try SQLiteDownloadStore(directory: directory)
        let stored = exactRecord()
        try store.save(stored)
        let queue = try DatabaseQueue(path: directory + "/swoop.sqlite")
        try queue.write { db in
            try db.execute(sql: "UPDATE download SET totalBytes = 'many', finalModified = 'soon', priority = 'high' WHERE id = ?", arguments: [stored.id.rawValue])
        }
        try queue.close()
        let read = try #require(try store.record(id: stored.id))
        #expect(read.totalBytes == 0 && read.finalModified == 0 && read.priority == 0)
        #expect(read.url == stored.url && read.fileName == stored.fileName && read.etag == stored.etag)
    }

    // MARK: - Durable writes across closing and reopening

    /// A record with times that survive the seconds-as-a-double columns exactly.
    func exactRecord(_ url: String = "http://127.0.0.1/a.bin") -> DownloadRecord {
        var record = record(url)
        record.createdAt = Date(timeIntervalSince1970: 1_700_000_000)
        record.updatedAt = Date(timeIntervalSince1970: 1_700_000_000.5)
        return record
    }

    /// Lookups of many at once (a page of `tellWaiting`, a batch of `addUri`) span several queries:
    /// every record asked for is found, in the order asked, the others left out.
    @Test func manyAtOnceCrossTheQueryChunks() throws {
        let store = try SQLiteDownloadStore(directory: directory)
        let records = (0..<1_200).map { i -> DownloadRecord in
            var r = record("http://127.0.0.1/\(i).bin")
            r.fileName = "f\(i % 600).bin"
            r.state = i % 3 == 0 ? .completed : .waiting
            return r
        }
        try store.save(contentsOf: records)
        let asked = records.map(\.id).shuffled().prefix(1_100) + [Download.ID("ffffffffffffffff")]
        #expect(try store.records(ids: Array(asked)).map(\.id) == Array(asked.dropLast()))
        let keys = records.map(\.key).reversed() + [DownloadKey(url: "http://127.0.0.1/0.bin", directory: "/elsewhere", requestedName: "")]
        #expect(try store.find(Array(keys)).map(\.id) == records.reversed().map(\.id))
        let names = (0..<700).map { "f\($0).bin" }
        let unfinished = try store.unfinished(directory: "/tmp/x", fileNames: names)
        #expect(Set(unfinished.map(\.id)) == Set(records.filter { $0.state != .completed }.map(\.id)))
        #expect(try store.unfinished(directory: "/elsewhere", fileNames: names).isEmpty)
    }

    /// Names are told apart by their bytes, as the file system does: é as one code point and as
    /// e + a combining accent are two downloads.
    @Test func keysInAnotherUnicodeNormalizationAreOtherDownloads() throws {
        let store = try SQLiteDownloadStore(directory: directory)
        let composed = record("http://127.0.0.1/x", name: "caf\u{E9}.bin")
        try store.save(composed)
        let decomposed = DownloadKey(url: "http://127.0.0.1/x", directory: "/tmp/x", requestedName: "cafe\u{301}.bin")
        #expect(decomposed == composed.key)  // equal as Swift strings
        #expect(try store.find([decomposed]).isEmpty)
        #expect(try store.find([composed.key]).map(\.id) == [composed.id])
    }

    @Test func aDurableSaveIsThereAfterClosingAndReopening() throws {
        var original = exactRecord()
        original.state = .paused
        original.committedBytes = 400
        original.syncedBytes = 300
        original.priority = 2
        original.position = 3
        original.headers = [HTTPHeaderField(name: "Cookie", value: "a=b")]
        let store = try SQLiteDownloadStore(directory: directory)
        try store.save(original)
        try store.close()

        let reopened = try SQLiteDownloadStore(directory: directory)
        #expect(try reopened.record(id: original.id) == original)
        #expect(try reopened.all() == [original])
    }

    @Test func aDurableUpdateIsThereAfterClosingAndReopening() throws {
        var original = exactRecord()
        original.priority = 4
        original.position = 9
        let store = try SQLiteDownloadStore(directory: directory)
        try store.save(original)
        var completed = original
        completed.priority = 0
        completed.position = 0
        completed.state = .completed
        completed.committedBytes = 1000
        completed.syncedBytes = 1000
        completed.finalSize = 1000
        completed.finalModified = 1_700_000_010.125
        completed.updatedAt = Date(timeIntervalSince1970: 1_700_000_020)
        try store.update(completed, durable: true)
        try store.close()

        let reopened = try SQLiteDownloadStore(directory: directory)
        var expected = completed
        expected.priority = 4
        expected.position = 9
        #expect(try reopened.record(id: original.id) == expected)
    }

    /// Durable saves from many threads at once share flushes of the log (`GroupSync`); each one
    /// still returns only once its record is written, and all of them are there after reopening.
    @Test func concurrentDurableSavesAreAllThereAfterReopening() throws {
        let store = try SQLiteDownloadStore(directory: directory)
        let records = (0..<64).map { exactRecord("http://127.0.0.1/\($0).bin") }
        let errors = ErrorLog()
        DispatchQueue.concurrentPerform(iterations: 16) { thread in
            for index in stride(from: thread, to: records.count, by: 16) {
                do {
                    try store.save(records[index])
                    var updated = records[index]
                    updated.state = .completed
                    updated.committedBytes = index
                    try store.update(updated, durable: true)
                } catch {
                    errors.append(error)
                }
            }
        }
        #expect(errors.messages.isEmpty)
        try store.close()

        let reopened = try SQLiteDownloadStore(directory: directory)
        let found = Dictionary(uniqueKeysWithValues: try reopened.all().map { ($0.id, $0) })
        #expect(found.count == records.count)
        for (index, record) in records.enumerated() {
            #expect(found[record.id]?.state == .completed)
            #expect(found[record.id]?.committedBytes == index)
            #expect(found[record.id]?.url == record.url)
        }
    }

    @Test func deleteRemovesTheRecord() throws {
        let store = try SQLiteDownloadStore(directory: directory)
        let r = record()
        try store.save(r)
        try store.delete(id: r.id)
        #expect(try store.all().isEmpty)
    }

    @Test func unreadableDatabaseIsAClearError() throws {
        let path = directory + "/not-a-db.sqlite"
        try Data("this is not sqlite".utf8).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: SwoopError.self) { try SQLiteDownloadStore(path: path) }
        #expect(error?.code == .store)
        #expect(error?.message.contains(path) == true)
    }

    @Test func defaultDirectoryFollowsXDG() {
        #expect(SQLiteDownloadStore.defaultDirectory(environment: ["XDG_STATE_HOME": "/s", "HOME": "/h"]) == "/s/swoop")
        #expect(SQLiteDownloadStore.defaultDirectory(environment: ["HOME": "/h"]) == "/h/.local/state/swoop")
        #expect(SQLiteDownloadStore.defaultDirectory(environment: ["XDG_STATE_HOME": "relative", "HOME": "/h"]) == "/h/.local/state/swoop")
    }

    /// A database from before settings and the `interrupted` state (migrations v1–v3) keeps its
    /// downloads through the table's rebuild, with no settings of their own; afterwards the new
    /// state and settings can be written.
    @Test func aVersionThreeDatabaseMigratesKeepingItsDownloads() throws {
        let path = directory + "/old.sqlite"
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteDownloadStore.stepByStepMigrator.migrate(queue, upTo: "v3: segments")
            try queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO download (id, url, directory, requestedName, fileName, state, totalBytes, committedBytes,
                        syncedBytes, bootID, etag, lastModified, finalSize, finalModified, checksum, lastError, createdAt,
                        updatedAt, headers, collisionPolicy, priority, position, bytesPerSecond, segments)
                        VALUES ('old-1', 'http://127.0.0.1/o.bin', '/tmp/x', '', 'o.bin', 'paused', 1000, 400, 300, 'b',
                        '"e"', 'Sun, 06 Nov 1994 08:49:37 GMT', 7, 8.5, 'md5=00', 'HTTP 503', 1, 2,
                        '[{"name":"X-A","value":"1"}]', 'overwrite', 3, 4, 0,
                        '[{"start":0,"end":500,"written":400,"synced":300}]')
                        """
                )
            }
        }
        let store = try SQLiteDownloadStore(path: path)
        // The id became a GID (v6); everything else is kept.
        #expect(try store.record(id: Download.ID("old-1")) == nil)
        let old = try #require(try store.find(url: "http://127.0.0.1/o.bin", directory: "/tmp/x", requestedName: ""))
        #expect(Download.ID.isGID(old.id.rawValue))
        #expect(old.state == .paused)
        #expect((old.committedBytes, old.syncedBytes, old.totalBytes) == (400, 300, 1000))
        #expect(old.headers == [HTTPHeaderField(name: "X-A", value: "1")])
        #expect((old.collisionPolicy, old.priority, old.position) == (.overwrite, 3, 4))
        #expect(old.settings == DownloadSettings())
        #expect((old.etag, old.lastModified, old.finalSize, old.finalModified) == ("\"e\"", "Sun, 06 Nov 1994 08:49:37 GMT", 7, 8.5))
        #expect((old.checksum, old.lastError, old.fileName) == ("md5=00", "HTTP 503", "o.bin"))
        #expect(old.segments == [Segment(start: 0, end: 500, written: 400, synced: 300)])
        // The rebuilt table keeps its unique key and its indexes.
        var twin = DownloadRecord(url: old.url, directory: old.directory, requestedName: "", bootID: "b")
        twin.fileName = "twin.bin"
        #expect(throws: SwoopError.self) { try store.save(twin) }
        #expect(try store.find(url: old.url, directory: old.directory, requestedName: "")?.id == old.id)
        var changed = old
        changed.state = .interrupted
        changed.settings.maxRetries = 2
        try store.save(changed)
        let pause = PostedControl(id: old.id, control: .pause, postedAt: Date(timeIntervalSince1970: 1_700_000_000))
        try store.post(pause)
        try store.close()
        let reopened = try SQLiteDownloadStore(path: path)
        #expect(try reopened.record(id: old.id) == changed)
        #expect(try reopened.controls() == [pause])
        let indexes = try DatabaseQueue(path: path).read { db in try db.indexes(on: "download").map(\.name) }
        #expect(Set(indexes).isSuperset(of: ["download_queue", "download_file"]))
    }

    /// A database migrated by v4 as it first shipped (a control per download, no answers, no
    /// token) gets GIDs (v6) and the table of answered controls (v9); its old controls were
    /// requests of the moment and are gone.
    @Test func aVersionFiveDatabaseGetsGIDsAndTheAnsweredControlsTable() throws {
        let path = directory + "/v5.sqlite"
        let kept = Download.ID.make()
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteDownloadStore.stepByStepMigrator.migrate(queue, upTo: "v5: mirrors")
            try queue.write { db in
                for (id, url) in [("7c9e6679-7425-40de-944b-e07fc1f90ae7", "http://127.0.0.1/a"), (kept.rawValue, "http://127.0.0.1/b")] {
                    try db.execute(
                        sql: """
                            INSERT INTO download (id, url, directory, requestedName, state, committedBytes, syncedBytes, bootID,
                            createdAt, updatedAt) VALUES (?, ?, '/tmp/x', '', 'waiting', 0, 0, 'b', 1, 2)
                            """, arguments: [id, url])
                }
                try db.execute(sql: "INSERT INTO control (id, request, postedAt) VALUES ('7c9e6679-7425-40de-944b-e07fc1f90ae7', 'pause', 3)")
            }
        }
        let store = try SQLiteDownloadStore(path: path)
        let records = try store.all()
        #expect(records.count == 2)
        #expect(records.allSatisfy { Download.ID.isGID($0.id.rawValue) })
        let moved = try #require(records.first { $0.url == "http://127.0.0.1/a" })
        #expect(records.first { $0.url == "http://127.0.0.1/b" }?.id == kept)
        #expect(try store.controls().isEmpty)
        let pause = PostedControl(id: moved.id, control: .pause, postedAt: Date(timeIntervalSince1970: 1_700_000_000))
        try store.post(pause)
        #expect(try store.controls() == [pause])
    }
}

/// Errors collected from several threads.
final class ErrorLog: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var collected: [String] = []

    func append(_ error: any Error) {
        lock.withLock { collected.append("\(error)") }
    }

    var messages: [String] { lock.withLock { collected } }
}
