import Foundation

/// What a running daemon leaves in its state directory (`daemon.json`, mode 0600) so that `swoop`
/// commands on the same state directory act through it: its address, its secret and its pid.
/// Removed when it stops; one left by a daemon that died is recognised by its pid.
public struct DaemonAddress: Codable, Sendable, Hashable {
    public static let fileName = "daemon.json"

    /// `http://127.0.0.1:6800`.
    public var url: String
    public var secret: String
    public var pid: Int32

    public init(url: String, secret: String, pid: Int32 = getpid()) {
        self.url = url
        self.secret = secret
        self.pid = pid
    }

    public static func path(in stateDirectory: String) -> String {
        stateDirectory + "/" + fileName
    }

    public func write(in stateDirectory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        try PrivateFile.write(Array(try encoder.encode(self)) + [0x0A], to: Self.path(in: stateDirectory))
    }

    /// The address of a daemon that still runs, or `nil`: one whose `daemon.lock` is held (the
    /// kernel drops the lock when the process dies, however it dies: no stale pid is trusted).
    public static func read(in stateDirectory: String) -> DaemonAddress? {
        guard let data = FileManager.default.contents(atPath: path(in: stateDirectory)),
            let address = try? JSONDecoder().decode(DaemonAddress.self, from: data),
            DaemonLock.isHeld(in: stateDirectory)
        else { return nil }
        return address
    }

    /// Removes the file if it is this process's.
    public static func remove(in stateDirectory: String) {
        if read(in: stateDirectory)?.pid == getpid() { unlink(path(in: stateDirectory)) }
    }
}
