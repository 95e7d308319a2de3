import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A private PostgreSQL cluster for tests: Debian's server binaries (`.ci/run` installs the
/// `postgresql` package), a fresh data directory under the temporary directory, TCP on 127.0.0.1 at a
/// free port and a Unix socket in that directory, password (SCRAM) login for the user `swoop`.
/// Started as the unprivileged `postgres` user when the tests run as root (PostgreSQL refuses root),
/// stopped by its PID (``stop()``, and at the test process's exit, when its directory is removed too).
public final class PostgresServer: Sendable {
    public let port: Int
    public let user = "swoop"
    public let password: String
    /// The directory of the cluster (its data, socket and log).
    public let directory: String
    /// The server's process (a new one after ``start()``).
    public var pid: Int32 { process.withLock { $0 } }
    private let process: Mutex<Int32>
    let binaries: String
    /// Whether it runs as the `postgres` user (the tests run as root).
    let asPostgres: Bool

    /// The one server of this test process, started at its first use (off Swift's cooperative
    /// threads: a test waiting for a process must not hold one of the two this machine has).
    public static func shared() async throws -> PostgresServer {
        try await offThePool { try sharedServer.get() }
    }

    /// Runs blocking work (a child process waited for) on a thread of its own.
    static func offThePool<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }

    private static let sharedServer: Result<PostgresServer, any Error> = Result { try PostgresServer() }

    /// A server of its own, for a test that stops and starts it (off the cooperative threads).
    public static func makePrivate() async throws -> PostgresServer {
        try await offThePool { try PostgresServer() }
    }

    /// Every server started by this process, stopped and its directory removed at its exit (one
    /// stopped already is skipped).
    private static let started: Mutex<[PostgresServer]> = {
        atexit { for server in PostgresServer.started.withLock({ $0 }) { server.discard() } }
        return Mutex([])
    }()

    /// Makes a new cluster and starts it; throws with PostgreSQL's own words when it cannot.
    public init() throws {
        guard let binaries = Self.findBinaries() else {
            throw TestServerError(code: .startFailed, message: "no PostgreSQL server found (install Debian's postgresql package)")
        }
        self.binaries = binaries
        directory = try makeTemporaryDirectory("swoop-pg")
        password = UUID().uuidString
        let owner = getuid() == 0 ? getpwnam("postgres") : nil
        if getuid() == 0, owner == nil {
            throw TestServerError(code: .startFailed, message: "running as root, and there is no postgres user to run PostgreSQL as")
        }
        try (password + "\n").write(toFile: directory + "/pwfile", atomically: false, encoding: .utf8)
        if let owner {
            for path in [directory, directory + "/pwfile"] { chown(path, owner.pointee.pw_uid, owner.pointee.pw_gid) }
        }
        try Self.run(
            binaries + "/initdb",
            ["-D", directory + "/data", "-U", "swoop", "--pwfile", directory + "/pwfile", "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync"],
            asPostgres: owner != nil, log: directory + "/initdb.log"
        )
        asPostgres = owner != nil
        var lastError = ""
        for _ in 0..<5 {
            // A free port: bound and let go, then PostgreSQL's (another process may take it between).
            let port = try TestPort(listening: false).port
            switch try Self.launch(binaries: binaries, directory: directory, port: port, asPostgres: owner != nil) {
            case .success(let pid):
                self.port = port
                self.process = Mutex(pid)
                Self.started.withLock { $0.append(self) }
                return
            case .failure(let error):
                lastError = error.message
            }
        }
        throw TestServerError(code: .startFailed, message: "PostgreSQL did not start: \(lastError)")
    }

    /// Starts the stopped server again, on the same port and data (a test of an outage).
    public func start() async throws {
        try await Self.offThePool { try self.startWaiting() }
    }

    func startWaiting() throws {
        switch try Self.launch(binaries: binaries, directory: directory, port: port, asPostgres: asPostgres) {
        case .success(let pid): process.withLock { $0 = pid }
        case .failure(let error): throw TestServerError(code: .startFailed, message: "PostgreSQL did not start again: \(error.message)")
        }
    }

    /// Starts `postgres` on `port` and waits until it answers; its PID, or its log when it did not.
    static func launch(binaries: String, directory: String, port: Int, asPostgres: Bool) throws -> Result<Int32, TestServerError> {
        let process = try Self.start(
            binaries + "/postgres",
            ["-D", directory + "/data", "-p", "\(port)", "-k", directory, "-c", "listen_addresses=127.0.0.1",
             "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200"],
            asPostgres: asPostgres, log: directory + "/postgres.log"
        )
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, process.isRunning, !FileManager.default.fileExists(atPath: directory + "/.s.PGSQL.\(port)") {
            usleep(20_000)
        }
        // Listening is not ready: until recovery ends it answers "the database system is starting up".
        while Date() < deadline, process.isRunning, !Self.isReady(binaries: binaries, port: port, log: directory + "/pg_isready.log") {
            usleep(50_000)
        }
        if process.isRunning, Self.isReady(binaries: binaries, port: port, log: directory + "/pg_isready.log") {
            return .success(process.processIdentifier)
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let log = (try? String(contentsOfFile: directory + "/postgres.log", encoding: .utf8)) ?? ""
        return .failure(TestServerError(code: .startFailed, message: String(log.suffix(2000))))
    }

    /// A `postgres://` URL for `database`, with the password in it.
    public func url(database: String) -> String {
        "postgres://\(user):\(password)@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    /// Makes a new, empty database and returns its name.
    public func makeDatabase(_ prefix: String = "test") async throws -> String {
        try await Self.offThePool { try self.makeDatabaseWaiting(prefix) }
    }

    func makeDatabaseWaiting(_ prefix: String) throws -> String {
        let name = "\(prefix)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased())"
        try Self.run(
            binaries + "/createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", user, name],
            asPostgres: false, log: directory + "/createdb-\(name).log", environment: ["PGPASSWORD": password]
        )
        return name
    }

    /// Runs one SQL statement in `database` with psql (for a test that looks behind the catalogue).
    public func psql(_ sql: String, database: String) async throws -> String {
        try await Self.offThePool { try self.psqlWaiting(sql, database: database) }
    }

    func psqlWaiting(_ sql: String, database: String) throws -> String {
        let output = directory + "/psql-\(UUID().uuidString).out"
        try Self.run(
            binaries + "/psql",
            ["-h", "127.0.0.1", "-p", "\(port)", "-U", user, "-d", database, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
            asPostgres: false, log: output, environment: ["PGPASSWORD": password]
        )
        return (try String(contentsOfFile: output, encoding: .utf8)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops the server (fast shutdown: SIGINT to its PID) and waits up to 30 s for it to go.
    public func stop() {
        // Taken once: a stopped server's PID may be another process's by now.
        let pid = process.withLock { pid in
            defer { pid = 0 }
            return pid
        }
        guard pid > 0 else { return }
        kill(pid, SIGINT)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, kill(pid, 0) == 0 {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(20_000)
        }
        kill(pid, SIGKILL)
    }

    /// Stops the server and removes its directory (the cluster's data, about 370 MB, its socket and
    /// logs): a test run leaves nothing behind. (``stop()`` alone keeps it, for ``start()``.)
    func discard() {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: - Processes

    /// The newest installed server's `bin` directory.
    static func findBinaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        return versions.reversed().map { "\(root)/\($0)/bin" }.first { FileManager.default.isExecutableFile(atPath: $0 + "/postgres") }
    }

    /// Starts `path` (as the postgres user when asked: `setpriv`, which keeps the PID PostgreSQL's own).
    static func start(_ path: String, _ arguments: [String], asPostgres: Bool, log: String, environment: [String: String] = [:]) throws -> Process {
        let process = Process()
        if asPostgres {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=postgres", "--regid=postgres", "--init-groups", "--", path] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
        }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try handle.close()
        return process
    }

    static func run(_ path: String, _ arguments: [String], asPostgres: Bool, log: String, environment: [String: String] = [:]) throws {
        let process = try start(path, arguments, asPostgres: asPostgres, log: log, environment: environment)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw TestServerError(code: .startFailed, message: "\(path) exited with status \(process.terminationStatus): \(text.suffix(2000))")
        }
    }

    /// Whether the server on `port` accepts connections (`pg_isready`'s exit status 0).
    static func isReady(binaries: String, port: Int, log: String) -> Bool {
        guard accepts(port: port) else { return false }
        return (try? run(binaries + "/pg_isready", ["-q", "-h", "127.0.0.1", "-p", "\(port)", "-U", "swoop", "-d", "postgres"], asPostgres: false, log: log)) != nil
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
