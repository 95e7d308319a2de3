import Foundation
import SwoopTesting

#if canImport(Glibc)
import Glibc
#endif

/// A `swoop daemon` started from the built binary on 127.0.0.1 port 0, with its own state and
/// download directories.
struct DaemonFixture {
    let running: SwoopBinary.Running
    let root: String
    let downloads: String
    let state: String
    let port: Int
    let secret: String

    /// Starts a daemon and waits (up to 20 s) until it writes `daemon.json`.
    static func start(
        root: String? = nil, secret: String? = "s3cret", extra: [String] = []
    ) async throws -> DaemonFixture {
        let root = try root ?? SwoopBinary.workspace("swoop-daemon").root
        let downloads = root + "/out", state = root + "/state"
        try FileManager.default.createDirectory(atPath: downloads, withIntermediateDirectories: true)
        // A file from an earlier daemon on this state directory is not this one's.
        unlink(state + "/daemon.json")
        var arguments = ["daemon", "--listen", "127.0.0.1:0", "--state-dir", state, "-d", downloads, "--log-level", "warning"]
        if let secret { arguments += ["--secret", secret] }
        let running = try SwoopBinary.Running(arguments + extra, directory: root)
        let deadline = ContinuousClock.now + patience
        while ContinuousClock.now < deadline {
            if let data = FileManager.default.contents(atPath: state + "/daemon.json"),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let url = object["url"] as? String, let port = url.split(separator: ":").last.flatMap({ Int($0) }),
                let key = object["secret"] as? String, (object["pid"] as? Int).map(Int32.init) == running.pid
            {
                return DaemonFixture(running: running, root: root, downloads: downloads, state: state, port: port, secret: key)
            }
            if !running.process.isRunning { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        let result = await running.wait(timeout: .seconds(1))
        throw DaemonFixtureError(message: "the daemon did not start: \(result.stdout) \(result.stderr)")
    }

    /// Stops it with SIGTERM and returns its result.
    func stop() async -> SwoopBinary.Result {
        running.signal(SIGTERM)
        return await running.wait(timeout: .seconds(30))
    }

    /// A JSON-RPC call over HTTP POST with the secret; the parsed reply object.
    func call(_ method: String, _ params: Any...) async throws -> [String: Any] {
        let body = try JSONSerialization.data(withJSONObject: ["jsonrpc": "2.0", "id": "t", "method": method, "params": ["token:\(secret)"] + params])
        let reply = try await RawHTTP.send(port: port, request: RawHTTP.post(port: port, body: Array(body)))
        return (try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any]) ?? [:]
    }

    /// A call's `result`.
    func result(_ method: String, _ params: Any...) async throws -> Any? {
        let body = try JSONSerialization.data(withJSONObject: ["jsonrpc": "2.0", "id": "t", "method": method, "params": ["token:\(secret)"] + params])
        let reply = try await RawHTTP.send(port: port, request: RawHTTP.post(port: port, body: Array(body)))
        return (try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any])?["result"]
    }

    /// Waits (up to ``patience``) until `tellStatus` says `status`.
    func waitFor(_ gid: String, _ status: String) async throws -> Bool {
        let deadline = ContinuousClock.now + patience
        while ContinuousClock.now < deadline {
            if (try await result("aria2.tellStatus", gid, ["status"]) as? [String: Any])?["status"] as? String == status { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}

struct DaemonFixtureError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// HTTP/1.1 over a plain socket, to send exactly the bytes a test means (a foreign Host, an
/// Origin, a WebSocket upgrade, a huge Content-Length) and see exactly what comes back.
enum RawHTTP {
    struct Reply {
        var status: Int
        var head: String
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    static func post(port: Int, body: [UInt8], headers: [String] = [], host: String? = nil) -> [UInt8] {
        let head = (["POST /jsonrpc HTTP/1.1", "Host: \(host ?? "127.0.0.1:\(port)")", "Content-Length: \(body.count)", "Connection: close"] + headers)
            .joined(separator: "\r\n") + "\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// Sends `request`, reads until the server closes (at most `timeout`), parses the reply.
    /// The socket blocks, so it runs on a thread of its own: never on Swift's cooperative threads
    /// (two on this machine), which every other test needs.
    static func send(port: Int, request: [UInt8], timeout: Duration = .seconds(10), closeWrite: Bool = false) async throws -> Reply {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try exchange(port: port, request: request, timeout: timeout, closeWrite: closeWrite) })
            }
            thread.start()
        }
    }

    private static func exchange(port: Int, request: [UInt8], timeout: Duration, closeWrite: Bool) throws -> Reply {
        try {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw DaemonFixtureError(message: "socket: \(errno)") }
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw DaemonFixtureError(message: "connect: \(errno)") }
            var seconds = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
            _ = request.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if closeWrite { shutdown(fd, Int32(SHUT_WR)) }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                received += buffer[0..<count]
            }
            return parse(received)
        }()
    }

    static func parse(_ bytes: [UInt8]) -> Reply {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, bytes.count - 3)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else {
            return Reply(status: 0, head: String(decoding: bytes, as: UTF8.self), body: [])
        }
        let head = String(decoding: bytes[..<end], as: UTF8.self)
        let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        var body = Array(bytes[(end + 4)...])
        if head.lowercased().contains("transfer-encoding: chunked") { body = dechunked(body) }
        return Reply(status: status, head: head, body: body)
    }

    static func dechunked(_ bytes: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        var index = 0
        while index < bytes.count {
            guard let lineEnd = (index..<bytes.count - 1).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }),
                let size = Int(String(decoding: bytes[index..<lineEnd], as: UTF8.self), radix: 16), size > 0
            else { break }
            let start = lineEnd + 2
            result += bytes[start..<min(bytes.count, start + size)]
            index = start + size + 2
        }
        return result
    }
}
