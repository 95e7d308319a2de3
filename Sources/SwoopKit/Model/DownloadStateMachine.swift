/// The one state machine of a download (see `docs/ARCHITECTURE.md`). Pure: it answers what a
/// request does to a state, or why the request is not allowed, and changes nothing itself.
public enum DownloadStateMachine {
    /// Something that happens to a download, asked for by a user or reported by the engine.
    public enum Request: String, Sendable, Hashable, CaseIterable {
        /// The scheduler starts the transfer.
        case start
        /// The transfer finished: all bytes, verified, renamed.
        case complete
        /// The transfer stopped with an error (after its retries).
        case fail
        /// The user pauses it.
        case pause
        /// Its process stops (Ctrl-C, shutdown, a cancelled task) and saves it.
        case interrupt
        /// The user asks for it to run again: it goes back to the waiting queue.
        case resume
        /// The user removes it.
        case remove
        /// The finished file was removed or changed on disk: it must be downloaded again.
        case invalidate
        /// At launch, a download a dead process left `active` goes back to the queue.
        case recover
    }

    /// The state after `request`, or an error naming why it is not allowed.
    public static func next(after state: Download.State, on request: Request) -> Result<Download.State, SwoopError> {
        switch (state, request) {
        case (.waiting, .start): return .success(.active)
        case (.active, .complete): return .success(.completed)
        case (.active, .fail): return .success(.failed)
        case (.waiting, .pause), (.active, .pause), (.interrupted, .pause): return .success(.paused)
        case (.active, .interrupt): return .success(.interrupted)
        case (.paused, .resume), (.interrupted, .resume), (.failed, .resume): return .success(.waiting)
        case (.completed, .invalidate): return .success(.waiting)
        case (.active, .recover): return .success(.waiting)
        case (.waiting, .remove), (.active, .remove), (.paused, .remove), (.interrupted, .remove), (.failed, .remove), (.completed, .remove):
            return .success(.removed)
        default:
            return .failure(SwoopError(.invalidArgument, reason(state: state, request: request)))
        }
    }

    private static func reason(state: Download.State, request: Request) -> String {
        switch (state, request) {
        case (.removed, _): return "the download was removed"
        case (.completed, .resume), (.completed, .start): return "the download is already complete"
        case (.completed, .pause): return "a completed download cannot be paused"
        case (.paused, .pause): return "the download is already paused"
        case (.failed, .pause): return "a failed download is not running; resume it instead"
        case (_, .interrupt): return "only a running download is interrupted"
        case (.waiting, .resume), (.active, .resume): return "the download is already \(state.rawValue)"
        default: return "cannot \(request.rawValue) a download that is \(state.rawValue)"
        }
    }
}
