/// The waiting queue and the rule that picks what starts next. Pure: the manager asks it what to
/// start and tells it what ended; it does no I/O.
///
/// Order: higher ``Entry/priority`` first, then smaller ``Entry/position`` (the order added).
/// A download starts when fewer than ``Limits/maxConcurrent`` run and its host has fewer than
/// ``Limits/maxPerHost`` running; a download whose host is full is skipped, not waited for, so one
/// busy host never holds up the others. A running download whose bytes have all arrived and that
/// is only being finished (flushed, recorded, renamed) gives its slot up (``finishing(_:)``): it
/// uses no connection, and with many small files on a disk the flushes would otherwise hold the
/// slots while the connections idle.
struct DownloadQueue: Sendable {
    /// How many downloads may run.
    struct Limits: Sendable, Hashable {
        var maxConcurrent: Int
        /// `nil`: no per-host limit.
        var maxPerHost: Int?
        /// How many files the process may hold open (``DescriptorLimit``), `nil` when unlimited
        /// or unknown: it bounds ``maxFinishing``.
        var descriptors: Int? = nil

        /// How many downloads may be finished at once with their slots given up (``finishing(_:)``):
        /// eight times ``maxConcurrent``, so at most nine times it are under way. On a journaled disk
        /// a group's flushes take milliseconds and more finish meanwhile than one limit's worth: with
        /// one, the 2,000 × 64 KiB run onto ext4 held slots waiting. Twice was 0.87–0.95 × its wall
        /// in A/B runs; four times, once the socket reads grew only as needed (`GrowingReadSize`),
        /// 0.85 × twice's for 10,000 × 1 KiB onto a fresh ext4 (0.96 × for 2,000 × 64 KiB), at
        /// 2.5–3.3 MiB more peak RSS (41 MiB for the 10,000); eight times, once a group flushes its
        /// file system at once (``GroupFlush``), 0.94 × four times' for 2,000 × 64 KiB (7 runs).
        ///
        /// Each holds its part file open: no more than what half of the ``descriptors`` leaves
        /// once each running download is counted twice (its part file and a connection; the other
        /// half is for `-x`'s connections, the store, the event loops, the daemon's clients). With
        /// none left, a download keeps its slot until it is finished.
        var maxFinishing: Int {
            let wanted = maxConcurrent * 8
            guard let descriptors else { return wanted }
            return max(0, min(wanted, descriptors / 2 - 2 * maxConcurrent))
        }
    }

    /// One queued download.
    struct Entry: Sendable, Hashable {
        var id: Download.ID
        /// The lower-cased host name, the unit the per-host limit counts.
        var host: String
        var priority: Int
        var position: Int

        static func precedes(_ a: Entry, _ b: Entry) -> Bool {
            a.priority != b.priority ? a.priority > b.priority : a.position < b.position
        }
    }

    var limits: Limits
    /// Waiting entries in start order: `order[head...]`. The ones before `head` have started:
    /// taking from the front moves `head` instead of the array (with 10,000 waiting, each start
    /// copied the rest down, 2% of the CPU time of 10,000 small files); the array sheds them once
    /// they are half of it.
    private var order: [Entry] = []
    private var head = 0
    /// Waiting entries in start order (a copy: see ``waitingCount`` for how many).
    var waiting: [Entry] { Array(order[head...]) }
    var waitingCount: Int { order.count - head }
    /// The ids in `waiting`, for constant-time membership tests (kept in step by every mutation).
    private var waitingIDs = Set<Download.ID>()
    /// Running downloads and their hosts (the ones being finished included).
    private(set) var active: [Download.ID: String] = [:]
    /// The running downloads being finished: they count in neither limit.
    private(set) var finishingIDs = Set<Download.ID>()
    /// Running downloads per host, less the ones being finished.
    private var perHost: [String: Int] = [:]

    /// How many running downloads count against ``Limits/maxConcurrent``.
    var occupied: Int { active.count - finishingIDs.count }

    init(limits: Limits) {
        self.limits = limits
    }

    var isIdle: Bool { waitingCount == 0 && active.isEmpty }

    func contains(_ id: Download.ID) -> Bool {
        active[id] != nil || waitingIDs.contains(id)
    }

    func isWaiting(_ id: Download.ID) -> Bool {
        waitingIDs.contains(id)
    }

    /// Adds entries (ignoring ones already queued or running) and keeps the order.
    mutating func enqueue(_ entries: [Entry]) {
        var seen = Set<Download.ID>()
        let fresh = entries.filter { !contains($0.id) && seen.insert($0.id).inserted }
        guard !fresh.isEmpty else { return }
        shedStarted()
        waitingIDs.formUnion(fresh.map(\.id))
        let wasOrdered = order.last.map { last in fresh.first.map { !Entry.precedes($0, last) } ?? true } ?? true
        order += fresh
        if !wasOrdered || !Self.isOrdered(fresh) {
            order.sort(by: Entry.precedes)
        }
    }

    /// Takes a waiting entry out of the queue. Returns whether it was waiting.
    @discardableResult
    mutating func removeWaiting(_ id: Download.ID) -> Bool {
        guard waitingIDs.remove(id) != nil else { return false }
        shedStarted()
        guard let index = order.firstIndex(where: { $0.id == id }) else { return false }
        order.remove(at: index)
        return true
    }

    /// Moves a waiting entry to `index` in the waiting order (see ``reordered(_:moving:to:firstPosition:)``).
    ///
    /// - Returns: The entries whose priority or position changed (to save), or `nil` when `id` is
    ///   not waiting.
    mutating func move(_ id: Download.ID, to index: Int, firstPosition: Int) -> [Entry]? {
        shedStarted()
        guard let (reordered, changed) = Self.reordered(order, moving: id, to: index, firstPosition: firstPosition) else { return nil }
        order = reordered
        return changed
    }

    /// `entries` (in start order) with `id` moved to `index` (clamped). It takes the priority of
    /// the entry it lands after (or before, at the front) so the order stays consistent, and the
    /// positions are renumbered from `firstPosition`.
    ///
    /// - Returns: The new order and the entries whose priority or position changed, or `nil` when
    ///   `id` is not among them.
    static func reordered(_ entries: [Entry], moving id: Download.ID, to index: Int, firstPosition: Int) -> ([Entry], [Entry])? {
        var entries = entries
        guard let from = entries.firstIndex(where: { $0.id == id }) else { return nil }
        var entry = entries.remove(at: from)
        let target = max(0, min(index, entries.count))
        if target > 0 {
            entry.priority = entries[target - 1].priority
        } else if let first = entries.first {
            entry.priority = max(entry.priority, first.priority)
        }
        entries.insert(entry, at: target)
        var changed: [Entry] = []
        for i in entries.indices {
            let position = firstPosition + i
            if entries[i].position != position || entries[i].id == id {
                entries[i].position = position
                changed.append(entries[i])
            }
        }
        return (entries, changed)
    }

    /// Takes new priorities and positions for waiting entries (from a reorder that also placed
    /// downloads outside the queue) and keeps the start order.
    mutating func update(_ entries: [Entry]) {
        let updates = Dictionary(entries.map { ($0.id, $0) }, uniquingKeysWith: { $1 })
        shedStarted()
        for index in order.indices {
            if let update = updates[order[index].id] {
                order[index].priority = update.priority
                order[index].position = update.position
            }
        }
        order.sort(by: Entry.precedes)
    }

    /// Changes a waiting entry's priority. Returns the changed entry, or `nil` when not waiting.
    mutating func setPriority(_ id: Download.ID, _ priority: Int) -> Entry? {
        shedStarted()
        guard let index = order.firstIndex(where: { $0.id == id }) else { return nil }
        var entry = order.remove(at: index)
        entry.priority = priority
        let insertAt = order.firstIndex { Entry.precedes(entry, $0) } ?? order.count
        order.insert(entry, at: insertAt)
        return entry
    }

    /// The entries to start now, in order; they count as running from here on.
    mutating func nextStarts() -> [Entry] {
        var started: [Entry] = []
        // Started from behind entries whose host is full.
        var takenBehind: [Int] = []
        var index = head
        while occupied < limits.maxConcurrent, index < order.endIndex {
            let entry = order[index]
            if let maxPerHost = limits.maxPerHost, perHost[entry.host, default: 0] >= maxPerHost {
                index += 1
                continue
            }
            active[entry.id] = entry.host
            perHost[entry.host, default: 0] += 1
            waitingIDs.remove(entry.id)
            started.append(entry)
            if index == head {
                head += 1
            } else {
                takenBehind.append(index)
            }
            index += 1
        }
        // Few start at once: removing them one by one (from the back) beats rebuilding the array.
        for index in takenBehind.reversed() {
            order.remove(at: index)
        }
        if head * 2 >= order.count { shedStarted() }
        return started
    }

    /// A running download's bytes have all arrived and it is being finished: it frees its slot
    /// and its host's (it stays ``active`` until ``finished(_:)``). At most ``Limits/maxFinishing``
    /// do at once, so that the downloads under way stay bounded (each holds memory until it ends).
    /// Returns whether it freed one (not when it is not running, freed it already, or as many are
    /// being finished as ``Limits/maxFinishing``).
    @discardableResult
    mutating func finishing(_ id: Download.ID) -> Bool {
        guard finishingIDs.count < limits.maxFinishing, let host = active[id], finishingIDs.insert(id).inserted else { return false }
        release(host)
        return true
    }

    /// A running download ended (whatever the outcome).
    mutating func finished(_ id: Download.ID) {
        guard let host = active.removeValue(forKey: id) else { return }
        if finishingIDs.remove(id) == nil { release(host) }
    }

    private mutating func release(_ host: String) {
        let remaining = perHost[host, default: 1] - 1
        perHost[host] = remaining > 0 ? remaining : nil
    }

    /// Drops the started entries before `head` from the array.
    private mutating func shedStarted() {
        guard head > 0 else { return }
        order.removeFirst(head)
        head = 0
    }

    private static func isOrdered(_ entries: [Entry]) -> Bool {
        zip(entries, entries.dropFirst()).allSatisfy { !Entry.precedes($1, $0) }
    }
}
