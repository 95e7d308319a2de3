/// A transfer rate over the last few seconds, from (time, total bytes) samples.
struct SpeedMeter: Sendable {
    private var samples: [(time: ContinuousClock.Instant, bytes: Int)] = []
    var window: Duration = .seconds(3)

    /// Adds a sample. A count below the last (a restart from zero) starts the samples over: the
    /// rate is never negative.
    mutating func record(bytes: Int, at time: ContinuousClock.Instant) {
        if let last = samples.last, bytes < last.bytes { samples.removeAll(keepingCapacity: true) }
        samples.append((time, bytes))
        while let first = samples.first, time - first.time > window, samples.count > 2 {
            samples.removeFirst()
        }
    }

    var bytesPerSecond: Double {
        guard let first = samples.first, let last = samples.last, last.time > first.time else { return 0 }
        let elapsed = last.time - first.time
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(last.bytes - first.bytes) / seconds
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    package var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
