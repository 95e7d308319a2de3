import Foundation
import NIOConcurrencyHelpers

/// Marks downloads `active` in their store once their first answer has been awaited for a moment,
/// so that other processes (`swoop ls`) see a download that is connecting as active. A download
/// records `active` itself with its first save of progress, which for a small file comes within
/// milliseconds: such a download is never marked, which saves it a write.
///
/// One timer task serves every download of its manager and stops when none is pending; the marks
/// due at one tick are written in one transaction. Each manager has its own, with its store, so two
/// managers in one process never mark each other's downloads.
final class ActiveMarks: Sendable {
    private struct State {
        /// When each download is due to be marked.
        var pending: [Download.ID: ContinuousClock.Instant] = [:]
        var ticking = false
    }

    private let store: any DownloadStore
    private let state = NIOLockedValueBox(State())
    private let tick = Duration.milliseconds(50)

    init(store: any DownloadStore) {
        self.store = store
    }

    /// Marks `id` active in the store after `delay`, unless ``remove(_:)`` comes first.
    func add(_ id: Download.ID, after delay: Duration) {
        let start = state.withLockedValue { state -> Bool in
            state.pending[id] = .now + delay
            defer { state.ticking = true }
            return !state.ticking
        }
        if start {
            Task.detached { await self.run() }
        }
    }

    /// Forgets `id`: it has recorded its state itself, or it ended.
    func remove(_ id: Download.ID) {
        state.withLockedValue { _ = $0.pending.removeValue(forKey: id) }
    }

    /// Whether `id` waits to be marked.
    func isPending(_ id: Download.ID) -> Bool {
        state.withLockedValue { $0.pending[id] != nil }
    }

    private func run() async {
        while true {
            try? await Task.sleep(for: tick)
            let (due, stop) = state.withLockedValue { state -> ([Download.ID], Bool) in
                let now = ContinuousClock.now
                let due = state.pending.filter { $0.value <= now }
                for id in due.keys { state.pending.removeValue(forKey: id) }
                if state.pending.isEmpty { state.ticking = false }
                return (Array(due.keys), state.pending.isEmpty)
            }
            // A record that left `waiting` meanwhile (progress saved, paused, done) is not touched.
            if !due.isEmpty { try? store.markActive(ids: due, at: Date()) }
            if stop { return }
        }
    }
}
