import Crypto
import Foundation

/// The lower-case hex SHA-256 of `bytes`: what tests compare a download with its source by.
public func sha256Hex(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

/// The lower-case hex SHA-256 of the file at `path`, or `nil` when it cannot be read.
public func sha256Hex(file path: String) -> String? {
    FileManager.default.contents(atPath: path).map { sha256Hex(Array($0)) }
}

/// The size of the file at `path`, or `nil` when it does not exist.
public func fileSize(_ path: String) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int
}

/// How long a test waits for what must come: a minute. Only a failing test waits that long, and a
/// passing one can need much of it: the whole suite runs at once on two cores, where CPU-bound
/// tests beside it can hold the cooperative threads for tens of seconds (a 100 kB download from
/// loopback took over 20 s to show in the suite's first half minute).
public let patience: Duration = .seconds(60)

/// Runs `body` and returns its value, or `nil` once `timeout` passes (and `body` is cancelled):
/// for a wait that an earlier failure could leave without end, such as an event that never comes.
public func withTimeout<Value: Sendable>(
    _ timeout: Duration = patience, _ body: @escaping @Sendable () async -> Value
) async -> Value? {
    await withTaskGroup(of: Value?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// Polls `condition` every few milliseconds until it holds or `timeout` passes; returns its last value.
public func eventually(timeout: Duration = patience, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// Polls an async `condition` (an actor's state, a database) every few milliseconds until it holds
/// or `timeout` passes; returns its last value.
public func eventuallyAsync(timeout: Duration = patience, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return await condition()
}

/// A small deterministic random generator (SplitMix64) for seeded tests.
public struct SplitMix: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Starts the sequence at `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
