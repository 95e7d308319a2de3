import NIOConcurrencyHelpers
import NIOCore

extension TestServer {
    /// The server's mutable state, shared by the public API and every connection's handler.
    ///
    /// Every access takes the lock; no method calls out while holding it.
    final class Store: Sendable {
        private struct State {
            var resources: [String: Resource] = [:]
            var queued: [String: [Behavior]] = [:]
            var defaults: [String: Behavior] = [:]
            var requests: [RecordedRequest] = []
            var bodyBytesSent: [String: Int] = [:]
            var connectionsAccepted = 0
            var openConnections: [ObjectIdentifier: any Channel] = [:]
            var isShutDown = false
            var openResponses: [Int: ContinuousClock.Instant] = [:]
            var nextResponse = 0
            var responseIntervals: [Range<ContinuousClock.Instant>] = []
        }

        private let state = NIOLockedValueBox(State())

        func serve(_ resource: Resource, at path: String) {
            self.state.withLockedValue { $0.resources[path] = resource }
        }

        func enqueue(_ behaviors: [Behavior], for path: String) {
            self.state.withLockedValue { $0.queued[path, default: []].append(contentsOf: behaviors) }
        }

        func setDefault(_ behavior: Behavior?, for path: String) {
            self.state.withLockedValue { $0.defaults[path] = behavior }
        }

        var requests: [RecordedRequest] {
            self.state.withLockedValue { $0.requests }
        }

        func bodyBytesSent(to path: String) -> Int {
            self.state.withLockedValue { $0.bodyBytesSent[path, default: 0] }
        }

        var connectionsAccepted: Int {
            self.state.withLockedValue { $0.connectionsAccepted }
        }

        /// Records `request` and picks what to answer with, in one step so that concurrent requests
        /// to a path each take a different queued behaviour.
        ///
        /// - Returns: The resource to answer from (after any `replaceResource`) and the behaviour.
        func receive(_ request: RecordedRequest) -> (resource: Resource?, behavior: Behavior) {
            self.state.withLockedValue { state in
                state.requests.append(request)
                let path = request.path
                var behavior = state.defaults[path] ?? .normal
                if var queue = state.queued[path], !queue.isEmpty {
                    behavior = queue.removeFirst()
                    state.queued[path] = queue
                }
                if case .replaceResource(let replacement) = behavior {
                    state.resources[path] = replacement
                    behavior = .normal
                }
                return (state.resources[path], behavior)
            }
        }

        /// A response begins; returns its number for ``endResponse(_:)``.
        func beginResponse() -> Int {
            self.state.withLockedValue { state in
                defer { state.nextResponse += 1 }
                state.openResponses[state.nextResponse] = .now
                return state.nextResponse
            }
        }

        func endResponse(_ number: Int) {
            self.state.withLockedValue { state in
                guard let start = state.openResponses.removeValue(forKey: number) else { return }
                state.responseIntervals.append(start..<max(start, .now))
            }
        }

        /// Finished responses' intervals, plus open ones up to now.
        var responseIntervals: [Range<ContinuousClock.Instant>] {
            self.state.withLockedValue { state in
                let now = ContinuousClock.now
                return state.responseIntervals + state.openResponses.values.map { $0..<max($0, now) }
            }
        }

        var openResponseCount: Int {
            self.state.withLockedValue { $0.openResponses.count }
        }

        var openConnectionCount: Int {
            self.state.withLockedValue { $0.openConnections.count }
        }

        func addBodyBytesSent(_ count: Int, to path: String) {
            self.state.withLockedValue { $0.bodyBytesSent[path, default: 0] += count }
        }

        /// Numbers a new connection.
        func nextConnectionID() -> Int {
            self.state.withLockedValue { state in
                defer { state.connectionsAccepted += 1 }
                return state.connectionsAccepted
            }
        }

        /// Tracks an open connection so that shutdown can close it.
        ///
        /// - Returns: `false` when the server is shutting down and the caller must close the channel.
        func register(_ channel: any Channel) -> Bool {
            self.state.withLockedValue { state in
                guard !state.isShutDown else { return false }
                state.openConnections[ObjectIdentifier(channel)] = channel
                return true
            }
        }

        func unregister(_ channel: any Channel) {
            _ = self.state.withLockedValue { $0.openConnections.removeValue(forKey: ObjectIdentifier(channel)) }
        }

        /// Marks the server shut down.
        ///
        /// - Returns: The connections open at that moment, or `nil` when shutdown had already begun.
        func beginShutdown() -> [any Channel]? {
            self.state.withLockedValue { state in
                guard !state.isShutDown else { return nil }
                state.isShutDown = true
                defer { state.openConnections = [:] }
                return Array(state.openConnections.values)
            }
        }

        var isShutDown: Bool {
            self.state.withLockedValue { $0.isShutDown }
        }
    }
}
