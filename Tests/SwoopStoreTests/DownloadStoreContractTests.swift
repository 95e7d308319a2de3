import Foundation
import SwoopKit
import SwoopTesting
import Testing

@testable import SwoopStore

/// What every `DownloadStore` promises about `update(_:durable:)` and `markActive(ids:at:)`, checked
/// against the SQLite store and the in-memory one (which uses the protocol's default versions).
@Suite("DownloadStore: update, markActive and the daemon's reads, in both stores")
struct DownloadStoreContractTests {
    enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case sqlite
        case memory

        var testDescription: String { rawValue }
    }

    /// Times that survive SQLite's seconds-as-a-double columns exactly.
    static let created = Date(timeIntervalSince1970: 1_700_000_000)
    static let touched = Date(timeIntervalSince1970: 1_700_000_100.5)

    func makeStore(_ kind: Kind) throws -> any DownloadStore {
        switch kind {
        case .memory:
            return InMemoryDownloadStore()
        case .sqlite:
            let directory = scratchPath("swoop-store")
            return try SQLiteDownloadStore(directory: directory)
        }
    }

    func record(_ name: String = "a.bin", state: Download.State = .waiting) -> DownloadRecord {
        var record = DownloadRecord(
            url: "http://127.0.0.1/\(name)", directory: "/tmp/x", requestedName: "", bootID: "boot-1", now: Self.created
        )
        record.state = state
        record.fileName = name
        record.totalBytes = 1000
        return record
    }

    /// A transfer holds a copy of its record from when it started; a `move` or `setPriority` made
    /// meanwhile must survive the transfer's next save.
    @Test(arguments: Kind.allCases, [false, true])
    func updateWritesTheTransfersColumnsAndKeepsQueuePlaceAndCreationTime(kind: Kind, durable: Bool) throws {
        let store = try makeStore(kind)
        var stored = record()
        stored.priority = 5
        stored.position = 7
        try store.save(stored)

        var transfer = record()
        transfer.id = stored.id
        transfer.priority = 0
        transfer.position = 99
        transfer.createdAt = Self.touched
        transfer.state = .completed
        transfer.fileName = "b.bin"
        transfer.totalBytes = 2000
        transfer.committedBytes = 2000
        transfer.syncedBytes = 1500
        transfer.bootID = "boot-2"
        transfer.etag = "\"v2\""
        transfer.lastModified = "Mon, 07 Nov 1994 08:49:37 GMT"
        transfer.finalSize = 2000
        transfer.finalModified = 1_700_000_050.25
        transfer.checksum = "sha-256=00"
        transfer.lastError = "an error"
        transfer.headers = [HTTPHeaderField(name: "X-A", value: "1")]
        transfer.collisionPolicy = .overwrite
        transfer.bytesPerSecond = 12.5
        transfer.segments = [
            Segment(start: 0, end: 1000, written: 1000, synced: 900),
            Segment(start: 1000, end: 2000, written: 1000, synced: 600),
        ]
        transfer.updatedAt = Self.touched
        try store.update(transfer, durable: durable)

        var expected = transfer
        expected.priority = 5
        expected.position = 7
        expected.createdAt = Self.created
        #expect(try store.record(id: stored.id) == expected)
        #expect(try store.all() == [expected])
    }

    @Test(arguments: Kind.allCases, [false, true])
    func updateDoesNotBringBackADeletedRecord(kind: Kind, durable: Bool) throws {
        let store = try makeStore(kind)
        let deleted = record()
        try store.save(deleted)
        try store.delete(id: deleted.id)
        var transfer = deleted
        transfer.state = .paused
        transfer.committedBytes = 500
        // A clear error (the transfer stops), and no record comes back.
        #expect(throws: SwoopError.self) { try store.update(transfer, durable: durable) }
        // Nor does it create one that was never saved.
        #expect(throws: SwoopError.self) { try store.update(record("never.bin"), durable: durable) }

        #expect(try store.record(id: deleted.id) == nil)
        #expect(try store.find(url: deleted.url, directory: deleted.directory, requestedName: "") == nil)
        #expect(try store.all().isEmpty)
    }

    /// A claim writes the record naming its file unless another unfinished record in the same
    /// directory names it; finished, removed and other directories' records do not count.
    @Test(arguments: Kind.allCases)
    func aClaimIsRefusedOnlyForANameAnotherUnfinishedRecordHolds(kind: Kind) throws {
        let store = try makeStore(kind)
        let holder = record("held.bin", state: .paused)
        let done = record("done.bin", state: .completed)
        var elsewhere = record("far.bin", state: .paused)
        elsewhere.directory = "/tmp/other"
        var mine = record("mine.bin", state: .active)
        mine.fileName = nil
        try store.save(contentsOf: [holder, done, elsewhere, mine])

        for (name, owner) in [("held.bin", holder.id), ("done.bin", nil), ("far.bin", nil), ("new.bin", nil)] {
            var claim = mine
            claim.fileName = name
            claim.totalBytes = 4242
            let refused = try store.claim(claim)
            #expect(refused?.id == owner, "\(name)")
            let stored = try #require(try store.record(id: mine.id))
            if owner == nil {
                #expect(stored.fileName == name && stored.totalBytes == 4242, "\(name)")
            } else {
                #expect(stored.fileName == nil && stored.totalBytes == 1000, "\(name): nothing written")
            }
            // Back to unclaimed for the next name.
            try store.update(mine, durable: false)
        }
        // Its own name, held by its own record, is its own.
        var again = mine
        again.fileName = "own.bin"
        #expect(try store.claim(again) == nil)
        #expect(try store.claim(again) == nil)
        // A record that is gone stays gone.
        try store.delete(id: mine.id)
        #expect(throws: SwoopError.self) { try store.claim(again) }
        #expect(try store.record(id: mine.id) == nil)
    }

    /// A group of downloads finishing together is recorded in one call: each record as `update`
    /// writes it, a deleted one failing alone and staying deleted.
    @Test(arguments: Kind.allCases, [false, true])
    func aGroupUpdateWritesEachRecordAndADeletedOneFailsAlone(kind: Kind, durable: Bool) throws {
        let store = try makeStore(kind)
        var records = ["a.bin", "b.bin", "c.bin"].map { record($0, state: .active) }
        records[0].priority = 3
        try store.save(contentsOf: records)
        try store.delete(id: records[1].id)
        for index in records.indices {
            records[index].state = .completed
            records[index].committedBytes = 1000
            records[index].finalSize = 1000
            records[index].priority = 0
        }
        let outcomes = store.update(contentsOf: records, durable: durable)
        #expect(outcomes.count == 3)
        #expect((try? outcomes[0].get()) != nil && (try? outcomes[2].get()) != nil)
        guard case .failure(let error) = outcomes[1] else {
            Issue.record("the update of a deleted record succeeded")
            return
        }
        #expect(error.code == .store && error.message.contains(records[1].url), "\(error.message)")
        #expect(try store.record(id: records[1].id) == nil)
        for index in [0, 2] {
            let stored = try #require(try store.record(id: records[index].id))
            #expect(stored.state == .completed && stored.committedBytes == 1000 && stored.finalSize == 1000)
        }
        // The queue place is not the transfer's to write.
        #expect(try store.record(id: records[0].id)?.priority == 3)
        #expect(store.update(contentsOf: [], durable: durable).isEmpty)
    }

    /// A group's waiting claims (`claiming`): a record whose file another unfinished record names
    /// fails alone with `destinationExists`, naming the holder, and is not written; the others are,
    /// in the same call. One record alone is written by the same rule.
    @Test(arguments: Kind.allCases, [false, true])
    func aGroupsRefusedClaimFailsAlone(kind: Kind, durable: Bool) throws {
        let store = try makeStore(kind)
        var holder = record("holder.bin", state: .paused)
        holder.fileName = "taken.bin"
        var records = ["free.bin", "taken.bin", "other.bin"].map { record($0, state: .active) }
        // Fresh downloads whose claims waited: stored with no name yet.
        try store.save(contentsOf: [holder] + records.map { var unnamed = $0; unnamed.fileName = nil; return unnamed })
        for index in records.indices {
            records[index].state = .completed
            records[index].committedBytes = 1000
        }
        let outcomes = store.update(contentsOf: records, claiming: Set(records.map(\.id)), durable: durable)
        #expect(outcomes.count == 3)
        #expect((try? outcomes[0].get()) != nil && (try? outcomes[2].get()) != nil)
        guard case .failure(let error) = outcomes[1] else {
            Issue.record("a claim of a name another download holds was written")
            return
        }
        #expect(error.code == .destinationExists && error.message.contains(holder.url), "\(error.message)")
        #expect(try store.record(id: records[1].id)?.fileName == nil)
        #expect(try store.record(id: records[0].id)?.fileName == "free.bin")
        #expect(try store.record(id: records[2].id)?.state == .completed)
        let alone = store.update(contentsOf: [records[1]], claiming: [records[1].id], durable: durable)
        #expect((try? alone.first?.get()) == nil)
        #expect(try store.record(id: records[1].id)?.state == .active)
    }

    @Test(arguments: Kind.allCases)
    func markActiveTurnsOnlyAWaitingRecordActive(kind: Kind) throws {
        let store = try makeStore(kind)
        let states: [Download.State] = [.waiting, .paused, .completed, .failed, .removed, .active, .waiting]
        let records = states.enumerated().map { record("\($0.offset)-\($0.element.rawValue).bin", state: $0.element) }
        try store.save(contentsOf: records)
        // One of them alone, then the rest and an id no record has together (one transaction).
        try store.markActive(id: records[0].id, at: Self.touched)
        try store.markActive(ids: records.dropFirst().map(\.id) + [Download.ID("no-such-download")], at: Self.touched)

        for index in [0, 6] {
            var waiting = records[index]
            waiting.state = .active
            waiting.updatedAt = Self.touched
            #expect(try store.record(id: waiting.id) == waiting)
        }
        for untouched in records.dropFirst().dropLast() {
            #expect(try store.record(id: untouched.id) == untouched, "\(untouched.state)")
        }
        #expect(try store.all().count == states.count)
    }

    /// A batch that re-queues records it read saves them only while they are as read: one another
    /// process changed meanwhile fails the batch retryably, with nothing of it saved.
    @Test(arguments: Kind.allCases)
    func aBatchExpectingRecordsAsReadFailsWhenOneChanged(kind: Kind) throws {
        let store = try makeStore(kind)
        let read = [record("a.bin"), record("b.bin")]
        try store.save(contentsOf: read)
        let versions = Dictionary(uniqueKeysWithValues: read.map { ($0.id, $0.version) })
        // Another process completes b meanwhile.
        var completed = read[1]
        completed.state = .completed
        completed.fileName = "b.bin"
        completed.committedBytes = 10
        try store.save(completed)
        var requeued = read
        for index in requeued.indices { requeued[index].priority = 7 }
        let fresh = record("c.bin")
        let error = #expect(throws: SwoopError.self) { try store.save(contentsOf: requeued + [fresh], expecting: versions) }
        #expect(error?.isRetryable == true)
        #expect(try store.record(id: read[1].id) == completed)
        #expect(try store.record(id: read[0].id)?.priority == read[0].priority)
        #expect(try store.record(id: fresh.id) == nil)
        // Read again, as they are now: saved.
        let again = Dictionary(uniqueKeysWithValues: try [read[0].id, read[1].id].map { ($0, try #require(try store.record(id: $0)).version) })
        try store.save(contentsOf: requeued + [fresh], expecting: again)
        #expect(try store.record(id: read[0].id)?.priority == 7)
        #expect(try store.record(id: fresh.id) != nil)
    }

    /// Settings are written by `update(settings:id:)` and by saves, never by a transfer's update: a
    /// limit changed while the download runs survives the transfer's next save.
    @Test(arguments: Kind.allCases)
    func settingsChangeOnlyThroughTheirOwnUpdateOrASave(kind: Kind) throws {
        let store = try makeStore(kind)
        var stored = record()
        stored.settings.maxConnections = 4
        stored.settings.proxy = ""
        try store.save(stored)
        #expect(try store.record(id: stored.id)?.settings == stored.settings)

        var changed = stored.settings
        changed.bytesPerSecond = 100_000
        try store.update(settings: changed, id: stored.id)
        var transfer = stored
        transfer.committedBytes = 500
        try store.update(transfer, durable: true)
        let after = try #require(try store.record(id: stored.id))
        #expect(after.settings == changed)
        #expect(after.committedBytes == 500)
    }

    /// Controls are kept one per request, oldest first, until withdrawn; an answer (done, or the
    /// error that stopped it, code and message) is kept with its request; they go with the record.
    @Test(arguments: Kind.allCases)
    func controlsAreKeptPerRequestUntilWithdrawnWithTheirAnswers(kind: Kind) throws {
        let store = try makeStore(kind)
        let (a, b) = (record("a.bin"), record("b.bin"))
        try store.save(contentsOf: [a, b])
        #expect(try store.controls().isEmpty)
        let pause = PostedControl(id: a.id, control: .pause, postedAt: Self.created)
        let limit = PostedControl(id: a.id, control: .applySettings, postedAt: Self.touched)
        let remove = PostedControl(id: b.id, control: .remove(deletingFile: true), postedAt: Self.touched)
        for control in [pause, limit, remove] { try store.post(control) }
        #expect(try store.controls() == [pause, limit, remove])

        try store.answer(pause.token, .done)
        try store.answer(limit.token, .failed(.invalidArgument, "a completed download cannot be paused"))
        let answered = try store.controls()
        #expect(answered.map(\.answer) == [.done, .failed(.invalidArgument, "a completed download cannot be paused"), nil])
        try store.withdraw(pause.token)
        #expect(try store.controls().map(\.token) == [limit.token, remove.token])
        try store.delete(id: b.id)
        #expect(try store.controls().map(\.token) == [limit.token])
    }

    @Test func everyControlRoundTripsThroughItsText() {
        let all: [DownloadControl] = [.pause, .cancel, .remove(deletingFile: false), .remove(deletingFile: true), .applySettings]
        for control in all { #expect(DownloadControl(rawValue: control.rawValue) == control) }
        #expect(DownloadControl(rawValue: "explode") == nil)
        #expect(Set(all.map(\.rawValue)).count == all.count)
    }

    /// A daemon's reads: a page of records by id, the records in some states, counts by state.
    @Test(arguments: Kind.allCases)
    func recordsByIDsByStatesAndCounts(kind: Kind) throws {
        let store = try makeStore(kind)
        var records: [DownloadRecord] = []
        for (index, state) in [Download.State.waiting, .paused, .completed, .paused, .failed].enumerated() {
            var record = record("f\(index).bin", state: state)
            record.position = 10 - index
            if state == .failed { record.setLastError(SwoopError(.httpStatus, "HTTP 404 for http://127.0.0.1/f4.bin", status: 404)) }
            records.append(record)
        }
        try store.save(contentsOf: records)
        let ids = [records[3].id, Download.ID.make(), records[0].id]
        #expect(try store.records(ids: ids).map(\.id) == [records[3].id, records[0].id])
        // Queue order: position 7 (f3) before 9 (f1).
        #expect(try store.records(in: [.paused]).map(\.id) == [records[3].id, records[1].id])
        #expect(try store.records(in: [.completed, .failed]).map(\.id) == [records[4].id, records[2].id])
        #expect(try store.record(id: records[4].id)?.lastErrorCode == "httpStatus:404")
        #expect(try store.record(id: records[4].id) == records[4])
        #expect(try store.records(in: [.removed]).isEmpty)
        #expect(try store.counts() == [.waiting: 1, .paused: 2, .completed: 1, .failed: 1])
        #expect(Set(try store.ids()) == Set(records.map(\.id)))
    }
}
