#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How many files this process may hold open (`RLIMIT_NOFILE`).
///
/// Every download holds its part file and its connections open, and one being finished its part
/// file: with `-j 128` and a soft limit of 1024, thousands of downloads failed with "Too many open
/// files", and libdispatch, finding no descriptor free for itself, stopped the process (SIGILL).
package enum DescriptorLimit {
    /// The soft limit, or `nil` when it cannot be read or is unlimited (`RLIM_INFINITY`).
    package static var current: Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
        return Int(clamping: limit.rlim_cur)
    }

    /// Raises the soft limit to the hard one (at most 1,048,576, Linux's default ceiling), as a
    /// program that holds many files open does; the command line calls it as it starts. Returns
    /// the soft limit now (`nil` when it cannot be read).
    @discardableResult
    package static func raiseToHard() -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        let ceiling = rlim_t(1 << 20)
        let wanted = limit.rlim_max == rlim_t.max ? ceiling : min(limit.rlim_max, ceiling)
        if limit.rlim_cur != rlim_t.max, limit.rlim_cur < wanted {
            limit.rlim_cur = wanted
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return current
    }
}
