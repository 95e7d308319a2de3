import NIOConcurrencyHelpers

/// Items handled on a disk thread in batches, one batch at a time: the items added while a batch is
/// being handled form the next one (at most ``maxBatch``). Adding to an idle queue starts a
/// ``DiskWork`` thread, which takes batches until none is left; an item added alone is a batch of
/// one, handled at once.
///
/// For work whose cost is mostly per batch, not per item (a flush, a transaction): the busier the
/// disk, the bigger the batches.
final class DiskBatches<Item: Sendable>: Sendable {
    private struct Waiting: Sendable {
        var items: [Item] = []
        /// A disk thread is taking batches; it takes the items that arrive meanwhile.
        var draining = false
    }

    private let waiting = NIOLockedValueBox(Waiting())
    let maxBatch: Int
    private let handle: @Sendable ([Item]) -> Void

    /// - Parameters:
    ///   - maxBatch: The most items one batch holds.
    ///   - handle: Handles one batch, on a disk thread; never called with none.
    init(maxBatch: Int, handle: @escaping @Sendable ([Item]) -> Void) {
        precondition(maxBatch > 0, "a batch holds at least one item")
        self.maxBatch = maxBatch
        self.handle = handle
    }

    /// Queues `item` for the next batch.
    func add(_ item: Item) {
        let startsDraining = waiting.withLockedValue { waiting in
            waiting.items.append(item)
            defer { waiting.draining = true }
            return !waiting.draining
        }
        if startsDraining { DiskWork.submit { self.drain() } }
    }

    /// How many items wait for a batch (not those of the batch being handled).
    var waitingCount: Int {
        waiting.withLockedValue { $0.items.count }
    }

    /// Handles batches until none is waiting.
    private func drain() {
        while true {
            let batch = waiting.withLockedValue { waiting in
                let batch = Array(waiting.items.prefix(maxBatch))
                waiting.items.removeFirst(batch.count)
                if batch.isEmpty { waiting.draining = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            handle(batch)
        }
    }
}
