import NIOConcurrencyHelpers
import NIOCore

/// Fans events out to subscribers, each with its own buffer.
///
/// Buffering policy: a subscriber that reads slowly never slows the downloads and never loses a
/// state change. Its buffer keeps every non-progress event it subscribed to in order (all of them,
/// unless it named a filter); a `progress` event replaces
/// that download's previous progress event if the subscriber has not read it yet (and nothing else
/// about that download came in between), so the buffer holds at most one progress event per
/// download. Terminal events (completed, failed, paused, removed) are never dropped or merged.
final class EventHub: Sendable {
    private let subscribers = NIOLockedValueBox<[Int: EventSubscription]>([:])
    private let nextID = NIOLockedValueBox(0)
    private let isFinished = NIOLockedValueBox(false)

    /// - Parameter included: The events this subscriber gets; the others are not buffered for it.
    func subscribe(where included: (@Sendable (DownloadEvent) -> Bool)? = nil) -> DownloadEvents {
        let subscription = EventSubscription(including: included)
        let id = nextID.withLockedValue { value in
            defer { value += 1 }
            return value
        }
        let finished = isFinished.withLockedValue { finished in
            if !finished { subscribers.withLockedValue { $0[id] = subscription } }
            return finished
        }
        if finished { subscription.finish() }
        let handle = SubscriptionHandle(subscription) { [subscribers] in
            subscription.cancel()
            _ = subscribers.withLockedValue { $0.removeValue(forKey: id) }
        }
        return DownloadEvents(handle: handle)
    }

    /// Live subscriptions (for tests).
    var subscriberCount: Int { subscribers.withLockedValue { $0.count } }

    func publish(_ event: DownloadEvent) {
        for subscription in subscribers.withLockedValue({ Array($0.values) }) {
            subscription.publish(event)
        }
    }

    /// Ends every stream once its buffered events are read; later subscribers get an ended stream.
    func finish() {
        let all = isFinished.withLockedValue { finished in
            finished = true
            return subscribers.withLockedValue { subscribers in
                defer { subscribers.removeAll() }
                return Array(subscribers.values)
            }
        }
        for subscription in all { subscription.finish() }
    }
}

/// The events of one subscriber, from ``DownloadManager/events()`` or
/// ``DownloadManager/events(where:)``: an `AsyncSequence` to iterate
/// once. The subscription ends when the reading task is cancelled, when the manager shuts down
/// (after the buffered events), or when the sequence and its iterator are no longer referenced
/// (leaving a `for await` loop with `break` is enough): its buffer is then freed.
public struct DownloadEvents: AsyncSequence, Sendable {
    public typealias Element = DownloadEvent
    public typealias Failure = Never

    let handle: SubscriptionHandle

    public func makeAsyncIterator() -> Iterator {
        Iterator(handle: handle)
    }

    /// Reads the subscriber's buffer.
    public struct Iterator: AsyncIteratorProtocol {
        let handle: SubscriptionHandle

        public mutating func next() async -> DownloadEvent? {
            await handle.subscription.next()
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> DownloadEvent? {
            await handle.subscription.next()
        }
    }
}

/// Ends its subscription when the last reference (the sequence or an iterator) goes away.
final class SubscriptionHandle: Sendable {
    let subscription: EventSubscription
    private let end: @Sendable () -> Void

    init(_ subscription: EventSubscription, end: @escaping @Sendable () -> Void) {
        self.subscription = subscription
        self.end = end
    }

    deinit { end() }
}

/// One subscriber's buffer and its waiting reader.
final class EventSubscription: Sendable {
    private struct State {
        var buffer = CircularBuffer<DownloadEvent>()
        /// The sequence number of `buffer.first`.
        var firstSequence = 0
        /// The sequence number of each download's unread progress event, while it is the newest
        /// buffered event of that download.
        var pendingProgress: [Download.ID: Int] = [:]
        var reader: CheckedContinuation<DownloadEvent?, Never>?
        var finished = false
        var cancelled = false
    }

    private let state = NIOLockedValueBox(State())
    private let included: (@Sendable (DownloadEvent) -> Bool)?

    init(including included: (@Sendable (DownloadEvent) -> Bool)? = nil) {
        self.included = included
    }

    func publish(_ event: DownloadEvent) {
        if let included, !included(event) { return }
        let reader = state.withLockedValue { state -> CheckedContinuation<DownloadEvent?, Never>? in
            guard !state.finished, !state.cancelled else { return nil }
            if let reader = state.reader {
                // A waiting reader means the buffer is empty: hand the event over directly.
                state.reader = nil
                return reader
            }
            let id = event.download.id
            let isProgress: Bool
            if case .progress = event { isProgress = true } else { isProgress = false }
            if isProgress, let sequence = state.pendingProgress[id] {
                let index = state.buffer.index(state.buffer.startIndex, offsetBy: sequence - state.firstSequence)
                state.buffer[index] = event
                return nil
            }
            state.pendingProgress[id] = isProgress ? state.firstSequence + state.buffer.count : nil
            state.buffer.append(event)
            return nil
        }
        reader?.resume(returning: event)
    }

    /// The next event, or `nil` once the hub finished and the buffer is drained, or on cancellation.
    func next() async -> DownloadEvent? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<DownloadEvent?, Never>) in
                let ready = state.withLockedValue { state -> DownloadEvent?? in
                    if let event = state.buffer.popFirst() {
                        let sequence = state.firstSequence
                        state.firstSequence += 1
                        if state.pendingProgress[event.download.id] == sequence {
                            state.pendingProgress[event.download.id] = nil
                        }
                        return .some(event)
                    }
                    if state.finished || state.cancelled { return .some(nil) }
                    state.reader = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            cancel()
        }
    }

    /// No more events: the reader gets what is buffered, then the end.
    func finish() {
        let reader = state.withLockedValue { state in
            state.finished = true
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume(returning: nil)
    }

    /// The reader is gone: drop everything.
    func cancel() {
        let reader = state.withLockedValue { state in
            state.cancelled = true
            state.buffer.removeAll()
            state.pendingProgress.removeAll()
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume(returning: nil)
    }

    /// How many events wait to be read (for tests).
    var bufferedCount: Int { state.withLockedValue { $0.buffer.count } }
}
