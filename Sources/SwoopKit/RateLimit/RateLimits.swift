import NIOConcurrencyHelpers

/// The rate limiters of one ``DownloadManager``: the overall limiter, the default rate of a
/// download, and the limiter of each running transfer (shared by all of that transfer's connections).
///
/// Rates are bytes per second; `nil` is no limit. A download's rate is its own
/// (``DownloadSettings/bytesPerSecond``, stored with it), else the default. Changes reach running
/// transfers at once.
final class RateLimits: Sendable {
    private struct Running {
        var limiter: RateLimiter
        /// Whether the download has no rate of its own, so a new default applies to it.
        var followsDefault: Bool
    }

    private struct State {
        var defaultRate: Int?
        var running: [Download.ID: Running] = [:]
    }

    /// The limit of all downloads together.
    let overall: RateLimiter
    private let state: NIOLockedValueBox<State>

    /// The limiters of `limits`.
    ///
    /// - Throws: ``SwoopError/Code/invalidArgument`` for a rate below 1.
    init(_ limits: Configuration.Limits) throws {
        try Self.validate(limits.perDownloadBytesPerSecond, "the default rate limit")
        try Self.validate(limits.overallBytesPerSecond, "the overall rate limit")
        overall = RateLimiter(bytesPerSecond: limits.overallBytesPerSecond)
        state = NIOLockedValueBox(State(defaultRate: limits.perDownloadBytesPerSecond))
    }

    /// The default rate of a download without one of its own.
    var defaultRate: Int? {
        state.withLockedValue { $0.defaultRate }
    }

    /// Changes the limit of all downloads together.
    func setOverall(_ rate: Int?) throws {
        try Self.validate(rate, "the overall rate limit")
        overall.setRate(rate)
    }

    /// Changes the default rate, for running downloads without a rate of their own too.
    func setDefault(_ rate: Int?) throws {
        try Self.validate(rate, "the default rate limit")
        state.withLockedValue { state in
            state.defaultRate = rate
            for running in state.running.values where running.followsDefault {
                running.limiter.setRate(rate)
            }
        }
    }

    /// Changes the rate of a running download. Returns `false` when `id` does not run here: its
    /// stored settings give the rate it starts with.
    ///
    /// - Parameter own: As ``start(_:own:)`` takes it.
    @discardableResult
    func set(_ id: Download.ID, own: Int??) throws -> Bool {
        if let rate = own { try Self.validate(rate, "the rate limit of download \(id)") }
        return state.withLockedValue { state in
            guard state.running[id] != nil else { return false }
            state.running[id]?.followsDefault = own == nil
            state.running[id]?.limiter.setRate(own ?? state.defaultRate)
            return true
        }
    }

    /// Makes the limiter of a transfer that starts now and returns what its bytes pass through.
    /// Call ``finish(_:)`` when it ends.
    ///
    /// - Parameter own: The download's own rate (``DownloadSettings/ownRate``): `nil` follows the
    ///   default, `.some(nil)` is no limit.
    func start(_ id: Download.ID, own: Int??) -> Throttle {
        let limiter = state.withLockedValue { state in
            let limiter = RateLimiter(bytesPerSecond: own ?? state.defaultRate)
            state.running[id] = Running(limiter: limiter, followsDefault: own == nil)
            return limiter
        }
        return Throttle(limiters: [limiter, overall])
    }

    /// Forgets the limiter of a transfer that ended.
    func finish(_ id: Download.ID) {
        state.withLockedValue { _ = $0.running.removeValue(forKey: id) }
    }

    /// The current rate of a running download, or `nil` when it has no limit or does not run.
    func runningRate(_ id: Download.ID) -> Int? {
        state.withLockedValue { $0.running[id]?.limiter.bytesPerSecond }
    }

    /// Throws unless `rate` is `nil` or at least 1.
    static func validate(_ rate: Int?, _ what: String) throws {
        if let rate, rate < 1 {
            throw SwoopError(.invalidArgument, "invalid \(what): \(rate) bytes per second (it must be at least 1, or nil for no limit)")
        }
    }
}
