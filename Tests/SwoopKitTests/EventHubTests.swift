import Testing

@testable import SwoopKit

@Suite("EventHub: per-subscriber buffers that merge progress and never drop the rest", .timeLimit(.minutes(1)))
struct EventHubTests {
    static func download(_ id: String, bytes: Int = 0, state: Download.State = .active) -> Download {
        Download(id: Download.ID(id), url: "http://h/\(id)", destination: nil, state: state, totalBytes: 100, completedBytes: bytes)
    }

    static func describe(_ event: DownloadEvent) -> String {
        let d = event.download
        switch event {
        case .added: return "added \(d.id)"
        case .started: return "started \(d.id)"
        case .progress: return "progress \(d.id) \(d.completedBytes)"
        case .notice(_, let text): return "notice \(d.id) \(text)"
        case .paused: return "paused \(d.id)"
        case .completed: return "completed \(d.id)"
        case .alreadyComplete: return "alreadyComplete \(d.id)"
        case .failed: return "failed \(d.id)"
        case .removed: return "removed \(d.id)"
        }
    }

    @Test func unreadProgressMergesPerDownloadInOrder() async {
        let hub = EventHub()
        let stream = hub.subscribe()
        hub.publish(.started(Self.download("a")))
        for bytes in 1...50 { hub.publish(.progress(Self.download("a", bytes: bytes))) }
        hub.publish(.progress(Self.download("b", bytes: 7)))
        for bytes in 51...60 { hub.publish(.progress(Self.download("a", bytes: bytes))) }
        hub.publish(.notice(Self.download("a"), "retrying"))
        hub.publish(.progress(Self.download("a", bytes: 70)))
        hub.publish(.progress(Self.download("a", bytes: 80)))
        hub.publish(.completed(Self.download("a", bytes: 100, state: .completed)))
        hub.finish()
        var seen: [String] = []
        for await event in stream { seen.append(Self.describe(event)) }
        #expect(seen == [
            "started a", "progress a 60", "progress b 7", "notice a retrying", "progress a 80", "completed a",
        ])
    }

    /// A subscriber that takes only some events never has the others buffered for it; another
    /// subscriber still gets everything.
    @Test func aFilteredSubscriptionBuffersOnlyWhatItTakes() async {
        let hub = EventHub()
        let terminal = hub.subscribe(where: { $0.isTerminal })
        let all = hub.subscribe()
        for i in 0..<100 { hub.publish(.added(Self.download("d\(i)", state: .waiting))) }
        hub.publish(.started(Self.download("d0")))
        hub.publish(.progress(Self.download("d0", bytes: 5)))
        hub.publish(.completed(Self.download("d0", bytes: 100, state: .completed)))
        #expect(terminal.handle.subscription.bufferedCount == 1)
        #expect(all.handle.subscription.bufferedCount == 103)
        hub.finish()
        var seen: [String] = []
        for await event in terminal { seen.append(Self.describe(event)) }
        #expect(seen == ["completed d0"])
    }

    @Test func terminalEventsAreNeverDroppedOrMerged() async {
        let hub = EventHub()
        let stream = hub.subscribe()
        for i in 0..<1000 {
            hub.publish(.progress(Self.download("d\(i)", bytes: 1)))
            hub.publish(.failed(Self.download("d\(i)", state: .failed), SwoopError(.network, "x")))
            hub.publish(.progress(Self.download("d\(i)", bytes: 2)))
        }
        hub.finish()
        var failed = 0
        var progress = 0
        for await event in stream {
            if case .failed = event { failed += 1 }
            if case .progress = event { progress += 1 }
        }
        #expect(failed == 1000)
        #expect(progress == 2000)
    }

    @Test func aWaitingReaderGetsEachEventAsItComes() async {
        let hub = EventHub()
        let stream = hub.subscribe()
        let reader = Task {
            var seen: [String] = []
            for await event in stream {
                seen.append(Self.describe(event))
                if seen.count == 3 { break }
            }
            return seen
        }
        for (id, bytes) in [("a", 10), ("b", 20), ("c", 30)] {
            // Distinct downloads: nothing merges, however the reader and the publisher interleave.
            try? await Task.sleep(for: .milliseconds(5))
            hub.publish(.progress(Self.download(id, bytes: bytes)))
        }
        #expect(await reader.value.count == 3)
    }

    @Test func everySubscriberHasItsOwnBufferAndFinishEndsThemAll() async {
        let hub = EventHub()
        let first = hub.subscribe()
        let second = hub.subscribe()
        hub.publish(.added(Self.download("a")))
        hub.publish(.removed(Self.download("a", state: .removed)))
        hub.finish()
        let late = hub.subscribe()
        var a: [String] = []
        for await event in first { a.append(Self.describe(event)) }
        var b: [String] = []
        for await event in second { b.append(Self.describe(event)) }
        var c = 0
        for await _ in late { c += 1 }
        #expect(a == ["added a", "removed a"])
        #expect(b == a)
        #expect(c == 0)
    }

    @Test func aCancelledReaderStopsWaiting() async {
        let hub = EventHub()
        let stream = hub.subscribe()
        let reader = Task {
            var count = 0
            for await _ in stream { count += 1 }
            return count
        }
        try? await Task.sleep(for: .milliseconds(20))
        reader.cancel()
        #expect(await reader.value == 0)
        // Publishing to a cancelled subscriber is harmless.
        hub.publish(.added(Self.download("a")))
    }

    @Test func mergingKeepsWorkingAfterReadsShiftTheBuffer() async {
        let hub = EventHub()
        let stream = hub.subscribe()
        var iterator = stream.makeAsyncIterator()
        hub.publish(.started(Self.download("a")))
        hub.publish(.progress(Self.download("a", bytes: 1)))
        hub.publish(.progress(Self.download("b", bytes: 1)))
        #expect(await iterator.next().map(Self.describe) == "started a")
        // "progress a 1" is now first in the buffer; these replace it and "progress b 1" in place.
        hub.publish(.progress(Self.download("a", bytes: 2)))
        hub.publish(.progress(Self.download("b", bytes: 2)))
        #expect(await iterator.next().map(Self.describe) == "progress a 2")
        hub.publish(.notice(Self.download("a"), "n"))
        hub.publish(.progress(Self.download("b", bytes: 3)))
        hub.publish(.progress(Self.download("a", bytes: 3)))
        hub.publish(.progress(Self.download("a", bytes: 4)))
        hub.finish()
        var rest: [String] = []
        while let event = await iterator.next() { rest.append(Self.describe(event)) }
        #expect(rest == ["progress b 3", "notice a n", "progress a 4"])
    }

    @Test func leavingTheLoopEndsTheSubscription() async {
        let hub = EventHub()
        do {
            let stream = hub.subscribe()
            hub.publish(.added(Self.download("a")))
            for await _ in stream { break }
        }
        #expect(hub.subscriberCount == 0)
        hub.publish(.added(Self.download("b")))
    }

    @Test func theBufferHoldsOneProgressEventPerDownload() {
        let subscription = EventSubscription()
        for round in 0..<100 {
            for id in ["a", "b", "c"] { subscription.publish(.progress(Self.download(id, bytes: round))) }
        }
        #expect(subscription.bufferedCount == 3)
    }
}
