import Foundation
import NIOConcurrencyHelpers
import SwoopTesting
import Testing

@testable import SwoopKit

/// Downloads that finish while a group is being finished are finished together: recorded completed
/// in one store call, each renamed only after it; one that cannot be recorded fails alone.
@Suite("Finishing in groups", .timeLimit(.minutes(1)))
struct FinishGroupsTests {
    static let count = 6

    /// Holds the first group in the store until every other download waits to finish, and checks
    /// each group's files as the store records them.
    final class Gate: Sendable {
        let manager = NIOLockedValueBox<DownloadManager?>(nil)
        /// The file names of each group, in the order the store saw them.
        let groups = NIOLockedValueBox<[[String]]>([])
        /// What was wrong with a file when its group was recorded.
        let violations = NIOLockedValueBox<[String]>([])
        /// Runs once every other download waits (with the names of the first group).
        let whenAllWait: @Sendable ([String]) -> Void

        init(whenAllWait: @escaping @Sendable ([String]) -> Void = { _ in }) {
            self.whenAllWait = whenAllWait
        }

        func observe(_ records: [DownloadRecord]) {
            for record in records {
                // Recorded before renamed: the bytes are all in the part file, the final name is free.
                if let final = record.destinationPath, FileSystem.exists(final) {
                    violations.withLockedValue { $0.append("\(final) exists before its record is stored") }
                }
                if let part = record.partPath, fileSize(part) != record.finalSize {
                    violations.withLockedValue { $0.append("\(part) holds \(fileSize(part) ?? -1) of \(record.finalSize ?? -1) bytes") }
                }
            }
            let names = records.compactMap(\.fileName).sorted()
            let isFirst = groups.withLockedValue { groups in
                groups.append(names)
                return groups.count == 1
            }
            guard isFirst, let finishes = manager.withLockedValue({ $0 })?.finishes else { return }
            // On the group's disk thread: the others arrive meanwhile (bounded wait).
            let deadline = ContinuousClock.now + .seconds(20)
            while finishes.waitingCount < FinishGroupsTests.count - names.count, ContinuousClock.now < deadline {
                usleep(2_000)
            }
            whenAllWait(names)
        }
    }

    /// Serves `count` files; all but the first are paced (about 0.1 s each), so the first finishes
    /// alone and its group is the one held while the others arrive, however loaded the machine.
    func serve(_ f: ManagerFixture, prefix: String, seedBase: Int) -> [[UInt8]] {
        (0..<Self.count).map { index in
            let path = "/\(prefix)\(index).bin"
            let body = f.serve(path, size: 20_000 + index, seed: UInt64(index + seedBase))
            if index > 0 { f.server.setDefault(path, .throttle(bytesPerSecond: 200_000)) }
            return body
        }
    }

    func start(_ f: ManagerFixture, store: ObservedStore, gate: Gate) throws -> (DownloadManager, ManagerEventLog, Task<Void, Never>) {
        var configuration = f.configuration
        configuration.queue.maxConcurrentDownloads = Self.count
        let manager = try DownloadManager(configuration: configuration, store: store)
        gate.manager.withLockedValue { $0 = manager }
        let events = ManagerEventLog(manager.events())
        return (manager, events, Task { await manager.run() })
    }

    @Test func downloadsThatFinishWhileAGroupIsFinishedAreRecordedTogetherThenRenamed() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let bodies = serve(f, prefix: "g", seedBase: 1)
        let gate = Gate()
        let store = ObservedStore(onGroup: { gate.observe($0) })
        let (manager, events, runner) = try start(f, store: store, gate: gate)
        let ids = try await manager.add(contentsOf: (0..<Self.count).map { try f.request("/g\($0).bin") })
        #expect(await events.wait { log in Set(log.filter { $0.caseName == "completed" }.map(\.download.id)) == Set(ids) })
        try? await manager.shutdown()
        await runner.value

        for (index, body) in bodies.enumerated() {
            #expect(sha256(file: f.path("g\(index).bin")) == sha256(body))
        }
        #expect(f.files().allSatisfy { !$0.hasSuffix(".swoop") })
        let groups = gate.groups.withLockedValue { $0 }
        // The first group, held in the store, and one group of all the others that came meanwhile.
        #expect(groups.count == 2, "\(groups)")
        #expect(Set(groups.joined()) == Set((0..<Self.count).map { "g\($0).bin" }))
        #expect(gate.violations.withLockedValue { $0 } == [])
        for id in ids {
            #expect(try store.record(id: id)?.state == .completed)
        }
    }

    @Test func aDownloadWhoseRecordIsGoneFailsAloneAndKeepsItsBytes() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let bodies = serve(f, prefix: "h", seedBase: 11)
        let inner = InMemoryDownloadStore()
        let removed = NIOLockedValueBox<DownloadRecord?>(nil)
        let gate = Gate { firstGroup in
            // Another process removes one of the waiting downloads' records meanwhile (small files:
            // their names reach the store with their completion).
            guard let victim = (try? inner.all())?.first(where: { record in
                record.state != .completed && !firstGroup.contains((record.url as NSString).lastPathComponent)
            }) else { return }
            try? inner.delete(id: victim.id)
            removed.withLockedValue { $0 = victim }
        }
        let store = ObservedStore(inner: inner, onGroup: { gate.observe($0) })
        let (manager, events, runner) = try start(f, store: store, gate: gate)
        let ids = try await manager.add(contentsOf: (0..<Self.count).map { try f.request("/h\($0).bin") })
        #expect(await events.wait { log in Set(log.filter(\.isTerminal).map(\.download.id)) == Set(ids) })
        try? await manager.shutdown()
        await runner.value

        let victim = try #require(removed.withLockedValue { $0 })
        let name = (victim.url as NSString).lastPathComponent
        let failure = try #require(events.terminal(victim.id).first)
        guard case .failed(_, let error) = failure else {
            Issue.record("\(name) ended \(failure.caseName), not failed")
            return
        }
        #expect(error.code == .store && error.message.contains("removed"), "\(error.message)")
        // Not renamed: its bytes stay in its part file.
        #expect(!FileSystem.exists(f.path(name)))
        let index = try #require(Int(name.dropFirst().dropLast(4)))
        #expect(sha256(file: f.path(name + ".swoop")) == sha256(bodies[index]))
        for other in ids where other != victim.id {
            #expect(events.terminal(other).map(\.caseName) == ["completed"])
        }
        #expect(gate.violations.withLockedValue { $0 } == [])
    }

    /// With one slot (`-j 1`), a download being finished gives it up: while the first file's group
    /// is held in the store, the second is fetched and comes to its own finish.
    @Test func aDownloadBeingFinishedGivesItsSlotToTheNext() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let bodies = (0..<2).map { f.serve("/s\($0).bin", size: 30_000 + $0, seed: UInt64(40 + $0)) }
        let managerBox = NIOLockedValueBox<DownloadManager?>(nil)
        let nextArrived = NIOLockedValueBox<Bool?>(nil)
        let store = ObservedStore(onGroup: { records in
            guard records.map(\.url).contains(where: { $0.hasSuffix("/s0.bin") }) else { return }
            // Holds s0's finish (on the group's disk thread) until s1 waits to finish too (bounded).
            let finishes = managerBox.withLockedValue { $0 }?.finishes
            let deadline = ContinuousClock.now + .seconds(10)
            while (finishes?.waitingCount ?? 0) < 1, ContinuousClock.now < deadline { usleep(2_000) }
            nextArrived.withLockedValue { $0 = (finishes?.waitingCount ?? 0) >= 1 }
        })
        var configuration = f.configuration
        configuration.queue.maxConcurrentDownloads = 1
        let manager = try DownloadManager(configuration: configuration, store: store)
        managerBox.withLockedValue { $0 = manager }
        let events = ManagerEventLog(manager.events())
        let runner = Task { await manager.run() }
        let ids = try await manager.add(contentsOf: [try f.request("/s0.bin"), try f.request("/s1.bin")])
        #expect(await events.wait { log in Set(log.filter { $0.caseName == "completed" }.map(\.download.id)) == Set(ids) })
        try? await manager.shutdown()
        await runner.value
        #expect(nextArrived.withLockedValue { $0 } == true, "s1 did not start while s0 was being finished")
        for (index, body) in bodies.enumerated() {
            #expect(sha256(file: f.path("s\(index).bin")) == sha256(body))
        }
    }

    /// Records each flush of a whole file system a group asks for: the part files then at their
    /// full size (the bytes the flush covers), then flushes it for real (or fails as told).
    final class FileSystemFlushes: Sendable {
        let covered = NIOLockedValueBox<[Set<String>]>([])
        let result: Int32?

        init(result: Int32? = nil) { self.result = result }

        func machine(_ f: ManagerFixture, sizes: [String: Int], dirty: Int?) -> FinishGroups.Machine {
            FinishGroups.Machine(
                dirtyBytes: { dirty },
                syncFileSystem: { fd in
                    let full = Set(sizes.filter { fileSize(f.path($0.key + ".swoop")) == $0.value }.keys)
                    self.covered.withLockedValue { $0.append(full) }
                    return self.result ?? FileSystem.syncFileSystem(holding: fd)
                }
            )
        }
    }

    /// One run of the six downloads whose groups flush through `flushes`: the first finishes alone
    /// and its group is held in the store until the five others wait; they are one group.
    struct FileSystemRun {
        let bodies: [[UInt8]]
        let ids: [Download.ID]
        let gate: Gate
        let events: ManagerEventLog
        let finishes: FinishGroups

        init(
            _ f: ManagerFixture, prefix: String, seedBase: Int, flushes: FileSystemFlushes, dirty: Int? = 0,
            onGroup: @escaping @Sendable ([DownloadRecord]) -> Void = { _ in }
        ) async throws {
            let suite = FinishGroupsTests()
            bodies = suite.serve(f, prefix: prefix, seedBase: seedBase)
            let gate = Gate()
            let store = ObservedStore(onGroup: { records in
                onGroup(records)
                gate.observe(records)
            })
            let (manager, events, runner) = try suite.start(f, store: store, gate: gate)
            let sizes = Dictionary(uniqueKeysWithValues: bodies.enumerated().map { ("\(prefix)\($0.offset).bin", $0.element.count) })
            manager.finishes.use(flushes.machine(f, sizes: sizes, dirty: dirty))
            let ids = try await manager.add(contentsOf: (0..<FinishGroupsTests.count).map { try f.request("/\(prefix)\($0).bin") })
            #expect(await events.wait { log in Set(log.filter(\.isTerminal).map(\.download.id)) == Set(ids) })
            try? await manager.shutdown()
            await runner.value
            (self.ids, self.gate, self.events, self.finishes) = (ids, gate, events, manager.finishes)
        }

        /// Whether every download completed byte-exact, but those of `except`.
        func completedByteExact(_ f: ManagerFixture, prefix: String, except: Set<Int> = []) -> Bool {
            bodies.indices.allSatisfy { index in
                except.contains(index)
                    || (events.terminal(ids[index]).map(\.caseName) == ["completed"]
                        && sha256(file: f.path("\(prefix)\(index).bin")) == sha256(bodies[index]))
            }
        }
    }

    @Test func aGroupFlushesItsFileSystemOnceAfterItsBytesAndBeforeItsRecord() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let flushes = FileSystemFlushes()
        let coveredAtRecord = NIOLockedValueBox<[String: Bool]>([:])
        let run = try await FileSystemRun(f, prefix: "fs", seedBase: 21, flushes: flushes) { records in
            let covered = flushes.covered.withLockedValue { $0.reduce(into: Set<String>()) { $0.formUnion($1) } }
            for name in records.compactMap(\.fileName) {
                coveredAtRecord.withLockedValue { $0[name] = covered.contains(name) }
            }
        }
        #expect(run.completedByteExact(f, prefix: "fs"))
        let groups = run.gate.groups.withLockedValue { $0 }
        #expect(groups.count == 2, "\(groups)")
        // The first finished alone (its own `fsync`); the other five with one flush of the file
        // system, made once all five were written and before their records were stored.
        let others = Set(groups.last ?? [])
        #expect(others.count == Self.count - 1)
        #expect(flushes.covered.withLockedValue { $0 } == [others])
        #expect(run.finishes.fileSystemFlushedCount == Self.count - 1)
        let covered = coveredAtRecord.withLockedValue { $0 }
        #expect(covered.filter(\.value).keys.sorted() == others.sorted(), "\(covered)")
        #expect(run.gate.violations.withLockedValue { $0 } == [])
    }

    @Test func aFileSystemFlushThatFailsLeavesEachFileToItsOwnFlush() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let flushes = FileSystemFlushes(result: EIO)
        let run = try await FileSystemRun(f, prefix: "ff", seedBase: 31, flushes: flushes)
        #expect(run.completedByteExact(f, prefix: "ff"))
        #expect(flushes.covered.withLockedValue { $0.count } == 1, "the group of five asked once")
        #expect(run.finishes.fileSystemFlushedCount == 0)
        #expect(run.gate.violations.withLockedValue { $0 } == [])
    }

    /// Much else waiting to be written on the machine, or no way to tell: each file its own flush.
    @Test(arguments: [Int?.none, .some(1 << 40)])
    func muchElseDirtyKeepsTheFileSystemUnflushed(dirty: Int?) async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let flushes = FileSystemFlushes()
        let run = try await FileSystemRun(f, prefix: "fd", seedBase: 41, flushes: flushes, dirty: dirty)
        #expect(run.completedByteExact(f, prefix: "fd"))
        #expect(run.gate.groups.withLockedValue { $0.count } == 2)
        #expect(flushes.covered.withLockedValue { $0 } == [])
        #expect(run.finishes.fileSystemFlushedCount == 0)
    }

    /// A file whose pages could not be written fails alone when its group flushed the file system:
    /// its own check reports its error, naming it; the others complete.
    @Test func aFileThatCannotBeWrittenFailsAloneWhenTheFileSystemWasFlushed() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let victim = f.path("fe3.bin.swoop")
        FlushFaults.armFromFinish(victim)
        defer { FlushFaults.disarm(victim) }
        let flushes = FileSystemFlushes()
        let run = try await FileSystemRun(f, prefix: "fe", seedBase: 51, flushes: flushes)
        #expect(flushes.covered.withLockedValue { $0.count } == 1)
        #expect(run.completedByteExact(f, prefix: "fe", except: [3]))
        let ends = run.events.terminal(run.ids[3])
        guard case .failed(_, let error)? = ends.first else {
            Issue.record("fe3.bin ended \(ends.map(\.caseName)), not failed")
            return
        }
        #expect(error.message == "cannot flush \(victim): Input/output error", "\(error.message)")
        #expect(!FileSystem.exists(f.path("fe3.bin")))
    }
}
