import Foundation
import SwoopTesting
import Testing

/// Disk full and read-only directories, on a small tmpfs the test mounts (needs root, as in CI).
@Suite("swoop get on a full or read-only disk", .serialized, .enabled(if: Mount.isPermitted), .timeLimit(.minutes(2)))
struct DiskFailureTests {
    @Test func diskFullIsAClearErrorAndTheSameCommandResumesAfterMoreSpace() async throws {
        let mount = try Mount(sizeKiB: 1024)
        defer { mount.unmount() }
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        let body = Resource.random(size: 3_000_000, seed: 11)
        server.serve("/big.bin", Resource(body: body, etag: "\"d\""))
        let arguments = ["get", "--state-dir", mount.stateDirectory, "-d", mount.path, server.url("/big.bin")]

        let full = try await SwoopBinary.run(arguments, in: mount.stateDirectory)
        #expect(full.status == 3)
        #expect(full.stderrLines.last == "swoop: error: cannot write to \(mount.path)/big.bin.swoop: No space left on device")
        #expect(!FileManager.default.fileExists(atPath: mount.path + "/big.bin"))

        try mount.resize(sizeKiB: 8192)
        let resumed = try await SwoopBinary.run(arguments, in: mount.stateDirectory)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(sha256Hex(file: mount.path + "/big.bin") == sha256Hex(body))
        let range = try #require(server.requests(to: "/big.bin").last?.header("Range"))
        #expect(range.hasPrefix("bytes=") && range != "bytes=0-")
    }

    @Test func readOnlyDirectoryIsNamedAndNothingIsRequested() async throws {
        let mount = try Mount(sizeKiB: 1024)
        defer { mount.unmount() }
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        server.serve("/a.bin", Resource(body: Resource.random(size: 1000, seed: 1), etag: "\"a\""))
        try mount.remount("ro")
        let arguments = ["get", "--state-dir", mount.stateDirectory, "-d", mount.path, server.url("/a.bin")]
        let refused = try await SwoopBinary.run(arguments, in: mount.stateDirectory)
        #expect(refused.status == 3)
        #expect(refused.stderrLines == ["swoop: error: cannot write to directory \(mount.path): Read-only file system"])
        #expect(server.requests.isEmpty)
        try mount.remount("rw")
        #expect(try await SwoopBinary.run(arguments, in: mount.stateDirectory).status == 0)
    }
}

/// A tmpfs mounted for one test, with a state directory outside it.
struct Mount {
    let path: String
    let stateDirectory: String

    static let isPermitted: Bool = {
        guard getuid() == 0, let probe = try? Mount(sizeKiB: 64) else { return false }
        probe.unmount()
        return true
    }()

    init(sizeKiB: Int) throws {
        let root = scratchPath("swoop-mount")
        path = root + "/disk"
        stateDirectory = root + "/state"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: stateDirectory, withIntermediateDirectories: true)
        try Self.mount(["-t", "tmpfs", "-o", "size=\(sizeKiB)k", "tmpfs", path])
    }

    func resize(sizeKiB: Int) throws { try Self.mount(["-o", "remount,size=\(sizeKiB)k", path]) }

    func remount(_ mode: String) throws { try Self.mount(["-o", "remount,\(mode)", path]) }

    func unmount() { try? Self.mount(["-u", path], command: "/bin/umount") }

    private static func mount(_ arguments: [String], command: String = "/bin/mount") throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command)
        process.arguments = arguments.first == "-u" ? Array(arguments.dropFirst()) : arguments
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "\(command) \(arguments) failed"])
        }
    }
}
