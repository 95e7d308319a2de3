/// How fast one connection fills its segment, since it took it: the measure of the bytes it has in
/// flight, which a connection stealing part of the segment must leave it (``SegmentPlan/steal(busy:reservedUpTo:keeps:minSplitSize:)``).
///
/// At the end of a download every connection but the slowest comes to steal. A split closer to the
/// victim's position than what the server has already sent it has those bytes sent twice: a
/// server throttled to 20 MB/s (nginx's `limit_rate`) sends in bursts of up to 2 MiB, a client
/// short of CPU leaves megabytes in its socket buffers, and a 2 MiB remainder split in halves cost
/// 1 MiB of each such steal. What a connection will have within ``horizon`` is as good as
/// delivered: a new request for it would hardly come sooner. (200 ms still lost 1 MiB a steal on a
/// loaded machine, whose connections read slower than the server had sent; 500 ms lost none, at
/// the same rate for 8 connections of 20 MB/s.)
struct SegmentPace: Sendable {
    /// How far ahead of a connection its bytes count as in flight.
    static let horizon = Duration.milliseconds(500)

    let since: ContinuousClock.Instant
    let writtenSince: Int

    init(at time: ContinuousClock.Instant, written: Int) {
        since = time
        writtenSince = written
    }

    /// The bytes the connection is expected to write within ``horizon`` from `now`, at the rate it
    /// kept since it took the segment (`written` is the segment's count now). Never more than it
    /// wrote so far: a connection's first burst says little of its rate.
    func inFlight(written: Int, at now: ContinuousClock.Instant) -> Int {
        let bytes = max(0, written - writtenSince)
        let elapsed = max((now - since).seconds, Self.horizon.seconds)
        return Int(Double(bytes) * Self.horizon.seconds / elapsed)
    }
}
