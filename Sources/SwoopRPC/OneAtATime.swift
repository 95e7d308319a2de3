/// Runs work for one key at a time, in the order it came; work for other keys runs alongside.
/// `changeUri` takes its download's turn, so that concurrent calls do not lose each other's URIs.
actor OneAtATime<Key: Hashable & Sendable> {
    private var busy: Set<Key> = []
    private var waiting: [Key: [CheckedContinuation<Void, Never>]] = [:]

    func run<T: Sendable>(_ key: Key, _ body: @Sendable () async throws -> T) async throws -> T {
        await acquire(key)
        do {
            let result = try await body()
            release(key)
            return result
        } catch {
            release(key)
            throw error
        }
    }

    private func acquire(_ key: Key) async {
        guard busy.insert(key).inserted else {
            await withCheckedContinuation { waiting[key, default: []].append($0) }
            return
        }
    }

    private func release(_ key: Key) {
        guard var queue = waiting[key], !queue.isEmpty else {
            busy.remove(key)
            return
        }
        // The key stays busy: it passes to the next in line.
        let next = queue.removeFirst()
        waiting[key] = queue.isEmpty ? nil : queue
        next.resume()
    }
}
