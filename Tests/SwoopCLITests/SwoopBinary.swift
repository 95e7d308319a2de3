import Foundation
import SwoopTesting

#if canImport(Glibc)
import Glibc
#endif

/// Runs the built `swoop` binary as a child process, as a user would.
struct SwoopBinary {
    /// The `swoop` executable beside the test bundle in the build folder.
    static var path: String {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("swoop").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/swoop").path
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        /// Standard output exactly as written (`stdout` is its UTF-8 reading).
        var stdoutBytes: [UInt8] = []
        var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
        var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
    }

    /// A running child.
    final class Running: @unchecked Sendable {  // Process is thread-safe for these calls
        let process: Process
        let out: URL
        let err: URL

        /// - Parameter environment: Variables for the child on top of this process's, whose proxy
        ///   variables are removed first; `nil` passes this process's environment unchanged.
        init(
            _ arguments: [String], directory: String, executable: String = SwoopBinary.path, environment: [String: String]? = nil
        ) throws {
            process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            if let environment {
                let proxyVariables: Set<String> = ["http_proxy", "https_proxy", "all_proxy", "no_proxy"]
                process.environment = ProcessInfo.processInfo.environment
                    .filter { !proxyVariables.contains($0.key.lowercased()) }
                    .merging(environment) { _, new in new }
            }
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            let base = scratchPath("swoop-cli")
            out = URL(fileURLWithPath: base + ".out")
            err = URL(fileURLWithPath: base + ".err")
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            _ = FileManager.default.createFile(atPath: err.path, contents: nil)
            process.standardOutput = try FileHandle(forWritingTo: out)
            process.standardError = try FileHandle(forWritingTo: err)
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }

        /// The output files go with the child's result: a run of the tests leaves nothing in /tmp.
        deinit {
            try? FileManager.default.removeItem(at: out)
            try? FileManager.default.removeItem(at: err)
        }

        var pid: Int32 { process.processIdentifier }

        func signal(_ number: Int32) { kill(process.processIdentifier, number) }

        /// Waits for the exit, killing the child after `timeout`.
        func wait(timeout: Duration = .seconds(60)) async -> Result {
            let deadline = ContinuousClock.now + timeout
            while process.isRunning {
                if ContinuousClock.now > deadline {
                    kill(process.processIdentifier, SIGKILL)
                    process.waitUntilExit()
                    break
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
            process.waitUntilExit()
            let stdout = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
            let stderr = (try? String(contentsOf: err, encoding: .utf8)) ?? ""
            let bytes = (try? Data(contentsOf: out)).map { Array($0) } ?? []
            return Result(status: process.terminationStatus, stdout: stdout, stderr: stderr, stdoutBytes: bytes)
        }
    }

    /// A fresh directory for one test: `root`, its `out` (created: downloads go there) and its
    /// `state` (not created: the binary makes it, and some tests check that it did not).
    static func workspace(_ prefix: String) throws -> (root: String, out: String, state: String) {
        let root = scratchPath(prefix)
        try FileManager.default.createDirectory(atPath: root + "/out", withIntermediateDirectories: true)
        return (root, root + "/out", root + "/state")
    }

    static func run(
        _ arguments: [String], in directory: String, executable: String = SwoopBinary.path, timeout: Duration = .seconds(60),
        environment: [String: String]? = nil
    ) async throws -> Result {
        try await Running(arguments, directory: directory, executable: executable, environment: environment).wait(timeout: timeout)
    }
}
