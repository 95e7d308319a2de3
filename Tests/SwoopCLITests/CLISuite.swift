import Foundation
import SwoopTesting
import Testing

/// What every suite that runs the binary starts from: a test server and a fresh workspace (`root`,
/// its `out` for downloads and its `state` directory).
struct CLIWorkspace {
    let server: TestServer
    let root: String
    let out: String
    let state: String

    /// A running test server on 127.0.0.1 and a workspace under the temporary directory.
    init(_ prefix: String) async throws {
        server = try await TestServer.start()
        (root, out, state) = try SwoopBinary.workspace(prefix)
    }
}

/// A suite of binary tests over one ``CLIWorkspace``: its parts by name, and the commands as the
/// suites run them.
protocol CLISuite {
    var cli: CLIWorkspace { get }
}

extension CLISuite {
    var server: TestServer { cli.server }
    var root: String { cli.root }
    var out: String { cli.out }
    var state: String { cli.state }

    /// `swoop COMMAND --state-dir STATE ARGUMENTS…` in the workspace.
    func swoop(_ command: String, _ arguments: [String], timeout: Duration = .seconds(90)) async throws -> SwoopBinary.Result {
        try await SwoopBinary.run([command, "--state-dir", state] + arguments, in: root, timeout: timeout)
    }

    /// Stops the test server in the background (for `defer`).
    func stop() {
        let server = self.server
        Task { try? await server.shutdown() }
    }

    /// `swoop ls --json`, decoded.
    func list() async throws -> [[String: Any]] {
        let result = try await swoop("ls", ["--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        return json as? [[String: Any]] ?? []
    }

    /// The same, left running.
    func start(_ command: String, _ arguments: [String]) throws -> SwoopBinary.Running {
        try SwoopBinary.Running([command, "--state-dir", state] + arguments, directory: root)
    }

    /// `swoop get` into `out`, with quick retries.
    func get(_ arguments: [String]) async throws -> SwoopBinary.Result {
        try await swoop("get", ["-d", out, "--retry-wait", "0.01"] + arguments, timeout: .seconds(60))
    }

    /// Serves `size` random bytes at `path` with a strong ETag and returns them.
    func serve(_ path: String, size: Int, seed: UInt64 = 7) -> [UInt8] {
        let body = Resource.random(size: size, seed: seed)
        server.serve(path, Resource(body: body, etag: "\"e1\""))
        return body
    }
}
