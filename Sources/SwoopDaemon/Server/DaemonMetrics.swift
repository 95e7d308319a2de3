import Foundation
import NIOConcurrencyHelpers
import Prometheus
import SwoopKit
import SwoopRPC

/// What `/metrics` shows, in Prometheus' text format: downloads by state, bytes downloaded,
/// current speed, retries, failures by reason, RPC calls and their latency. Counters follow the
/// manager's events (``observe(_:)``) and the RPC endpoint (``recordCall(methods:duration:)``);
/// the gauges are read from the manager at each scrape.
final class DaemonMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let bytes: Counter
    private let retries: Counter
    private let speed: Gauge
    /// Per running download: the bytes last counted, and the retry its last event showed.
    private let seen = NIOLockedValueBox<[Download.ID: (bytes: Int, retry: Download.Retry?)]>([:])
    /// Latency buckets of an RPC call, 100 µs to 5 s.
    private static let buckets: [Duration] = [.microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
        .milliseconds(2.5), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5)]

    init() {
        bytes = registry.makeCounter(descriptor: .init(
            namespace: "swoop", metricName: "downloaded", unitName: "bytes_total", helpText: "Bytes received by this daemon's transfers"))
        retries = registry.makeCounter(descriptor: .init(
            namespace: "swoop", metricName: "retries", unitName: "total", helpText: "Attempts retried after a transient error"))
        speed = registry.makeGauge(descriptor: .init(
            namespace: "swoop", metricName: "download_speed", unitName: "bytes_per_second", helpText: "Current speed of all transfers"))
    }

    /// Counts what a manager event tells: new bytes, a retry announced, a failure and its reason.
    ///
    /// A retry is announced by a notice whose snapshot carries a retry the download's previous
    /// event did not (attempt numbers start again after progress or a mirror: not a counter).
    func observe(_ event: DownloadEvent) {
        let download = event.download
        let (newBytes, newRetry) = seen.withLockedValue { seen -> (Int, Bool) in
            let before = seen[download.id] ?? (download.completedBytes, nil)
            seen[download.id] = event.isTerminal ? nil : (download.completedBytes, download.retry)
            let isRetry: Bool
            if case .notice = event, let retry = download.retry, retry != before.retry { isRetry = true } else { isRetry = false }
            // A restart from zero lowers the count: nothing new was received by it.
            return (max(0, download.completedBytes - before.bytes), isRetry)
        }
        if newBytes > 0 { bytes.increment(by: Int64(newBytes)) }
        if newRetry { retries.increment() }
        if case .failed(_, let error) = event {
            registry.makeCounter(descriptor: Self.failures, labels: [("reason", error.code.description)]).increment()
        }
    }

    private static var failures: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "swoop", metricName: "failures", unitName: "total", helpText: "Downloads that failed, by the kind of error")
    }
    private static var calls: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "swoop", subsystem: "rpc", metricName: "requests", unitName: "total", helpText: "JSON-RPC calls, by method")
    }
    private static var latency: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "swoop", subsystem: "rpc", metricName: "message_duration", unitName: "seconds",
            helpText: "Time to answer one JSON-RPC message (a batch or multicall is one), by its first method")
    }
    private static var downloads: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "swoop", metricName: "downloads", unitName: "", helpText: "Downloads known to this daemon, by state")
    }

    /// One answered message: each call's method counted (unknown names as "unknown", so that
    /// clients cannot grow the label set), the time labelled with the first.
    func recordCall(methods: [String], duration: Duration) {
        let names = methods.map { Aria2RPC.knownMethods.contains($0) ? $0 : "unknown" }
        for name in names {
            registry.makeCounter(descriptor: Self.calls, labels: [("method", name)]).increment()
        }
        registry.makeDurationHistogram(descriptor: Self.latency, labels: [("method", names.first ?? "unknown")], buckets: Self.buckets)
            .record(duration)
    }

    /// The text for a scrape, with the gauges read from `manager` now.
    func render(manager: DownloadManager) async -> [UInt8] {
        let stats = await manager.stats()
        speed.set(Double(stats.bytesPerSecond))
        if let counts = try? await manager.counts() {
            for state in Download.State.allCases {
                registry.makeGauge(descriptor: Self.downloads, labels: [("state", state.rawValue)]).set(Int64(counts[state, default: 0]))
            }
        }
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}
