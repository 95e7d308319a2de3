import NIOConcurrencyHelpers

/// The open WebSocket sessions, each with a bounded queue of messages to send, so that a
/// notification goes to every session without waiting for a slow one (a session that falls
/// 1,024 messages behind loses the newest until it catches up).
final class NotificationHub: Sendable {
    private struct State {
        var next = 0
        var sessions: [Int: AsyncStream<String>.Continuation] = [:]
    }

    private let state = NIOLockedValueBox(State())

    /// A new session's number and the stream of what to send it.
    func open() -> (Int, AsyncStream<String>) {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingOldest(1024))
        let number = state.withLockedValue { state in
            state.next += 1
            state.sessions[state.next] = continuation
            return state.next
        }
        return (number, stream)
    }

    func close(_ number: Int) {
        state.withLockedValue { $0.sessions.removeValue(forKey: number) }?.finish()
    }

    /// Queues `text` for every session.
    func send(_ text: String) {
        for continuation in state.withLockedValue({ Array($0.sessions.values) }) { continuation.yield(text) }
    }

    /// Ends every session's queue (at shutdown).
    func closeAll() {
        let all = state.withLockedValue { state in
            defer { state.sessions = [:] }
            return Array(state.sessions.values)
        }
        for continuation in all { continuation.finish() }
    }
}
