import SwoopTesting
import Testing

@testable import SwoopKit

@Suite("DownloadQueue: the scheduling rule")
struct DownloadQueueTests {
    static func entry(_ name: String, host: String = "a", priority: Int = 0, position: Int) -> DownloadQueue.Entry {
        DownloadQueue.Entry(id: Download.ID(name), host: host, priority: priority, position: position)
    }

    static func ids(_ entries: [DownloadQueue.Entry]) -> [String] { entries.map(\.id.rawValue) }

    @Test func startsInOrderUpToTheLimitAndTheNextWhenOneEnds() {
        var queue = DownloadQueue(limits: .init(maxConcurrent: 2, maxPerHost: nil))
        queue.enqueue((0..<5).map { Self.entry("d\($0)", position: $0) })
        #expect(Self.ids(queue.nextStarts()) == ["d0", "d1"])
        #expect(queue.nextStarts().isEmpty)
        queue.finished(Download.ID("d1"))
        #expect(Self.ids(queue.nextStarts()) == ["d2"])
        #expect(Set(queue.active.keys) == [Download.ID("d0"), Download.ID("d2")])
        #expect(Self.ids(queue.waiting) == ["d3", "d4"])
    }

    @Test func higherPriorityFirstThenPosition() {
        var queue = DownloadQueue(limits: .init(maxConcurrent: 10, maxPerHost: nil))
        queue.enqueue([
            Self.entry("low", position: 0), Self.entry("high", priority: 5, position: 3),
            Self.entry("mid", priority: 1, position: 2), Self.entry("low2", position: 1),
        ])
        #expect(Self.ids(queue.waiting) == ["high", "mid", "low", "low2"])
        queue.enqueue([Self.entry("urgent", priority: 9, position: 9)])
        #expect(Self.ids(queue.nextStarts()) == ["urgent", "high", "mid", "low", "low2"])
    }

    @Test func aFullHostIsSkippedNotWaitedFor() {
        var queue = DownloadQueue(limits: .init(maxConcurrent: 3, maxPerHost: 1))
        queue.enqueue([
            Self.entry("a1", host: "a", position: 0), Self.entry("a2", host: "a", position: 1),
            Self.entry("b1", host: "b", position: 2), Self.entry("a3", host: "a", position: 3),
            Self.entry("c1", host: "c", position: 4),
        ])
        #expect(Self.ids(queue.nextStarts()) == ["a1", "b1", "c1"])
        queue.finished(Download.ID("b1"))
        // b's slot is free but only a-downloads wait, and a is full.
        #expect(queue.nextStarts().isEmpty)
        queue.finished(Download.ID("a1"))
        #expect(Self.ids(queue.nextStarts()) == ["a2"])
    }

    @Test func raisingTheLimitStartsMore() {
        var queue = DownloadQueue(limits: .init(maxConcurrent: 1, maxPerHost: nil))
        queue.enqueue((0..<4).map { Self.entry("d\($0)", position: $0) })
        #expect(queue.nextStarts().count == 1)
        queue.limits.maxConcurrent = 3
        #expect(Self.ids(queue.nextStarts()) == ["d1", "d2"])
        queue.limits.maxConcurrent = 1
        #expect(queue.nextStarts().isEmpty)
        #expect(queue.active.count == 3)
    }

    @Test func enqueueIgnoresWhatIsAlreadyQueuedOrRunning() {
        var queue = DownloadQueue(limits: .init(maxConcurrent: 1, maxPerHost: nil))
        queue.enqueue([Self.entry("a", position: 0), Self.entry("b", position: 1), Self.entry("a", position: 5)])
        _ = queue.nextStarts()
        queue.enqueue([Self.entry("a", position: 7), Self.entry("b", position: 8)])
        #expect(Self.ids(queue.waiting) == ["b"])
        #expect(queue.contains(Download.ID("a")) && queue.contains(Download.ID("b")))
        #expect(!queue.isWaiting(Download.ID("a")))
    }

    @Test func moveRenumbersAndTakesTheNeighboursPriority() throws {
        var queue = DownloadQueue(limits: .init(maxConcurrent: 1, maxPerHost: nil))
        queue.enqueue([
            Self.entry("p", priority: 2, position: 0), Self.entry("a", position: 1), Self.entry("b", position: 2),
            Self.entry("c", position: 3),
        ])
        let moved = queue.move(Download.ID("c"), to: 1, firstPosition: 10)
        let changed = try #require(moved)
        #expect(Self.ids(queue.waiting) == ["p", "c", "a", "b"])
        #expect(queue.waiting.map(\.position) == [10, 11, 12, 13])
        #expect(queue.waiting[1].priority == 2)
        #expect(Set(Self.ids(changed)) == ["p", "c", "a", "b"])
        let second = queue.move(Download.ID("b"), to: 0, firstPosition: 0)
        #expect(second != nil)
        #expect(Self.ids(queue.waiting) == ["b", "p", "c", "a"])
        #expect(queue.waiting[0].priority == 2)
        let third = queue.move(Download.ID("b"), to: 99, firstPosition: 0)
        #expect(third != nil)
        #expect(Self.ids(queue.waiting) == ["p", "c", "a", "b"])
        let missing = queue.move(Download.ID("nope"), to: 0, firstPosition: 0)
        #expect(missing == nil)
        // Order after moves is still consistent with (priority, position).
        #expect(queue.waiting == queue.waiting.sorted(by: DownloadQueue.Entry.precedes))
    }

    @Test func setPriorityReorders() throws {
        var queue = DownloadQueue(limits: .init(maxConcurrent: 1, maxPerHost: nil))
        queue.enqueue([Self.entry("a", position: 0), Self.entry("b", position: 1), Self.entry("c", position: 2)])
        let raised = queue.setPriority(Download.ID("c"), 3)
        let changed = try #require(raised)
        #expect(changed.priority == 3)
        #expect(Self.ids(queue.waiting) == ["c", "a", "b"])
        let lowered = queue.setPriority(Download.ID("c"), -1)
        #expect(lowered != nil)
        #expect(Self.ids(queue.waiting) == ["a", "b", "c"])
        let unknown = queue.setPriority(Download.ID("zzz"), 1)
        #expect(unknown == nil)
    }

    @Test func removeWaitingAndFinishedBookkeeping() {
        var queue = DownloadQueue(limits: .init(maxConcurrent: 1, maxPerHost: 1))
        queue.enqueue([Self.entry("a", position: 0), Self.entry("b", position: 1)])
        let removed = queue.removeWaiting(Download.ID("b"))
        let again = queue.removeWaiting(Download.ID("b"))
        #expect(removed && !again)
        _ = queue.nextStarts()
        queue.finished(Download.ID("a"))
        queue.finished(Download.ID("a"))
        #expect(queue.isIdle)
        queue.enqueue([Self.entry("c", position: 2)])
        #expect(Self.ids(queue.nextStarts()) == ["c"])
    }

    @Test(arguments: [1, 2, 3, 5])
    func neverMoreThanTheLimitsWhateverTheOrderOfEvents(limit: Int) {
        var queue = DownloadQueue(limits: .init(maxConcurrent: limit + 1, maxPerHost: limit))
        let hosts = ["x", "y", "z"]
        queue.enqueue((0..<60).map { Self.entry("d\($0)", host: hosts[$0 % 3], priority: $0 % 4, position: $0) })
        var generator = SplitMix(seed: UInt64(limit))
        var started = 0
        for _ in 0..<300 {
            started += queue.nextStarts().count
            // The ones being finished count in neither limit.
            let transferring = queue.active.filter { !queue.finishingIDs.contains($0.key) }
            #expect(transferring.count <= limit + 1)
            #expect(queue.finishingIDs.count <= 4 * (limit + 1))
            #expect(queue.occupied == transferring.count)
            for host in hosts {
                #expect(transferring.values.filter { $0 == host }.count <= limit)
            }
            let running = queue.active.keys.sorted(by: { $0.rawValue < $1.rawValue })
            if let victim = running.first(where: { _ in generator.next() % 3 == 0 }) {
                if generator.next() % 2 == 0 { queue.finishing(victim) } else { queue.finished(victim) }
            }
        }
        #expect(started <= 60)
    }

    @Test func aDownloadBeingFinishedGivesItsSlotAndItsHostsUp() {
        var queue = DownloadQueue(limits: .init(maxConcurrent: 2, maxPerHost: 1))
        queue.enqueue([
            Self.entry("a1", host: "a", position: 0), Self.entry("b1", host: "b", position: 1),
            Self.entry("a2", host: "a", position: 2), Self.entry("c1", host: "c", position: 3),
        ])
        #expect(Self.ids(queue.nextStarts()) == ["a1", "b1"])
        #expect(queue.nextStarts().isEmpty)
        // a1's bytes have all arrived: its slot and its host's go to a2, the next in order.
        let freed = queue.finishing(Download.ID("a1"))
        let again = queue.finishing(Download.ID("a1"))
        let notRunning = queue.finishing(Download.ID("c1"))
        #expect(freed && !again && !notRunning)
        #expect(Self.ids(queue.nextStarts()) == ["a2"])
        #expect(queue.active.count == 3 && queue.occupied == 2)
        #expect(queue.contains(Download.ID("a1")) && !queue.isIdle)
        // Its end frees nothing more: a2 still holds host a, and c1 waits for a slot.
        queue.finished(Download.ID("a1"))
        #expect(queue.nextStarts().isEmpty)
        #expect(queue.active.count == 2 && queue.occupied == 2)
        queue.finished(Download.ID("a2"))
        #expect(Self.ids(queue.nextStarts()) == ["c1"])
        for id in ["b1", "c1"] { queue.finished(Download.ID(id)) }
        #expect(queue.isIdle && queue.finishingIDs.isEmpty)
    }

    /// No more downloads are being finished with their slots given up than eight times the limit:
    /// with them, at most nine times the limit are under way.
    @Test func atMostEightTimesTheLimitGiveTheirSlotsUpAtOnce() {
        var queue = DownloadQueue(limits: .init(maxConcurrent: 1, maxPerHost: nil))
        #expect(queue.limits.maxFinishing == 8)
        queue.enqueue((0..<12).map { Self.entry("d\($0)", position: $0) })
        for index in 0..<8 {
            #expect(Self.ids(queue.nextStarts()) == ["d\(index)"])
            let freed = queue.finishing(Download.ID("d\(index)"))
            #expect(freed)
        }
        #expect(Self.ids(queue.nextStarts()) == ["d8"])
        let ninth = queue.finishing(Download.ID("d8"))
        #expect(!ninth, "eight are being finished already")
        #expect(queue.nextStarts().isEmpty)
        #expect(queue.active.count == 9 && queue.occupied == 1)
        queue.finished(Download.ID("d0"))
        let now = queue.finishing(Download.ID("d8"))
        #expect(now)
        #expect(Self.ids(queue.nextStarts()) == ["d9"])
    }

    /// The downloads being finished hold their part files open: the descriptors the process may
    /// hold bound how many (half of them, less two for each running download); none left, a
    /// download keeps its slot until it is finished.
    @Test(arguments: [
        // (-j, descriptor limit, most finishing at once)
        (16, Int?.none, 128), (16, 1024, 128), (16, 20_000, 128), (128, 1024, 256), (200, 1024, 112),
        (256, 1024, 0), (400, 1024, 0), (1, 16, 6), (1, 4, 0),
    ] as [(Int, Int?, Int)])
    func theDescriptorsBoundHowManyAreFinishedAtOnce(jobs: Int, descriptors: Int?, finishing: Int) {
        let limits = DownloadQueue.Limits(maxConcurrent: jobs, maxPerHost: nil, descriptors: descriptors)
        #expect(limits.maxFinishing == finishing)
        var queue = DownloadQueue(limits: limits)
        queue.enqueue([Self.entry("a", position: 0)])
        #expect(Self.ids(queue.nextStarts()) == ["a"])
        #expect(queue.finishing(Download.ID("a")) == (finishing > 0))
    }

    /// The queue against a plain model of its rule (the waiting entries sorted, the first that fit
    /// the limits start), through random enqueues, starts, ends, removals, priority changes and
    /// moves: starting from the front moves an index rather than the array, and every other
    /// change must see exactly the entries still waiting.
    @Test(arguments: [1, 2, 3])
    func theWaitingOrderMatchesAPlainModelWhateverTheOrderOfChanges(seed: Int) {
        let limits = DownloadQueue.Limits(maxConcurrent: 3, maxPerHost: 2)
        var queue = DownloadQueue(limits: limits)
        var model: [DownloadQueue.Entry] = []
        var running: [Download.ID: String] = [:]
        var generator = SplitMix(seed: UInt64(seed))
        var next = 0
        func pick(_ count: Int) -> Int { Int(generator.next() % UInt64(count)) }
        for _ in 0..<1_000 {
            switch pick(8) {
            case 0:
                let fresh = (0..<(1 + pick(6))).map { _ in
                    defer { next += 1 }
                    return Self.entry("d\(next)", host: ["x", "y", "z"][pick(3)], priority: pick(3), position: next)
                }
                queue.enqueue(fresh)
                model = (model + fresh).sorted(by: DownloadQueue.Entry.precedes)
            case 1, 2:
                var expected: [DownloadQueue.Entry] = []
                var perHost = Dictionary(grouping: running.values, by: { $0 }).mapValues(\.count)
                for entry in model where running.count + expected.count < limits.maxConcurrent {
                    guard perHost[entry.host, default: 0] < limits.maxPerHost! else { continue }
                    perHost[entry.host, default: 0] += 1
                    expected.append(entry)
                }
                let started = queue.nextStarts()
                #expect(started == expected)
                model.removeAll { entry in started.contains { $0.id == entry.id } }
                for entry in started { running[entry.id] = entry.host }
            case 3, 4:
                if let id = running.keys.min(by: { $0.rawValue < $1.rawValue }) {
                    queue.finished(id)
                    running[id] = nil
                }
            case 5:
                if !model.isEmpty {
                    let victim = model.remove(at: pick(model.count))
                    let removed = queue.removeWaiting(victim.id)
                    #expect(removed)
                }
            case 6:
                if !model.isEmpty {
                    var entry = model.remove(at: pick(model.count))
                    entry.priority = pick(4)
                    let changed = queue.setPriority(entry.id, entry.priority)
                    #expect(changed == entry)
                    let at = model.firstIndex { DownloadQueue.Entry.precedes(entry, $0) } ?? model.count
                    model.insert(entry, at: at)
                }
            default:
                if !model.isEmpty {
                    let id = model[pick(model.count)].id
                    let to = pick(model.count + 1)
                    let first = model.map(\.position).min() ?? 0
                    let expected = DownloadQueue.reordered(model, moving: id, to: to, firstPosition: first)
                    let changed = queue.move(id, to: to, firstPosition: first)
                    #expect(changed == expected?.1)
                    model = expected?.0 ?? model
                }
            }
            #expect(queue.waiting == model)
            #expect(queue.waitingCount == model.count)
            #expect(model.allSatisfy { queue.isWaiting($0.id) && queue.contains($0.id) })
            #expect(running.keys.allSatisfy { !queue.isWaiting($0) && queue.contains($0) })
            #expect(queue.isIdle == (model.isEmpty && running.isEmpty))
        }
    }
}
