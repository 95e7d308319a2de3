// ahc-floor LIST DIR [JOBS]: fetch every URL of LIST (one per line) into DIR with AsyncHTTPClient,
// JOBS (16) at once, each body written to a file named after the URL's last path component as it
// arrives. No store, no locks, no flush, no part files, no retries, no progress: the floor of
// Swoop's many-small-files path with the HTTP client it uses, for scripts/bench-many.py to quote
// beside swoop and curl. The client is configured as Swoop's HTTPClientFactory configures it for plain
// HTTP with the default options (HTTP/1.1, no decompression, no redirects, no tracing spans, no
// connection retries, 30 s connect and 60 s read timeouts, one 512 KiB read per wake-up). Unlike
// swoop's release binary it links the Swift runtime as shared libraries and skips swoop's link
// order, so its peak RSS is not like-for-like; its wall and CPU time are the comparison.
import AsyncHTTPClient
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

@main
struct AHCFloor {
    static func main() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count >= 3, let list = FileHandleLines(path: arguments[1]) else {
            print("usage: ahc-floor LIST DIR [JOBS]")
            exit(2)
        }
        let directory = arguments[2]
        let jobs = arguments.count > 3 ? Int(arguments[3]) ?? 16 : 16
        let urls = list.lines.filter { !$0.isEmpty }

        // As Sources/SwoopKit/HTTP/HTTPClientFactory.swift makes it for plain HTTP with the defaults.
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(30), read: .seconds(60)),
            decompression: .disabled
        )
        configuration.httpVersion = .http1Only
        configuration.tracing.tracer = nil
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(8, jobs)
        configuration.http1_1ConnectionDebugInitializer = { channel in
            channel.setOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 1 << 19)).flatMap {
                channel.setOption(ChannelOptions.maxMessagesPerRead, value: 1)
            }
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        var failures = 0
        do {
            failures = try await withThrowingTaskGroup(of: Int.self) { group in
                var next = 0
                func start() {
                    guard next < urls.count else { return }
                    let url = urls[next]
                    next += 1
                    group.addTask { try await fetch(url, into: directory, client: client) ? 0 : 1 }
                }
                for _ in 0..<jobs { start() }
                var failed = 0
                while let result = try await group.next() {
                    failed += result
                    start()
                }
                return failed
            }
        } catch {
            print("ahc-floor: \(error)")
            failures = 1
        }
        try await client.shutdown()
        exit(failures == 0 ? 0 : 1)
    }

    static func fetch(_ url: String, into directory: String, client: HTTPClient) async throws -> Bool {
        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
        guard response.status == .ok else {
            print("ahc-floor: \(url): \(response.status)")
            return false
        }
        let name = url.split(separator: "/").last.map(String.init) ?? "index"
        let descriptor = open("\(directory)/\(name)", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else {
            print("ahc-floor: cannot create \(directory)/\(name)")
            return false
        }
        defer { close(descriptor) }
        for try await chunk in response.body {
            var written = 0
            while written < chunk.readableBytes {
                let count = chunk.withUnsafeReadableBytes { bytes in
                    write(descriptor, bytes.baseAddress.map { $0 + written }, bytes.count - written)
                }
                guard count > 0 else { return false }
                written += count
            }
        }
        return true
    }
}

/// The lines of a small text file.
struct FileHandleLines {
    let lines: [String]

    init?(path: String) {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var lines: [String] = []
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        while getline(&line, &capacity, file) > 0, let line {
            lines.append(String(String(cString: line).filter { !$0.isWhitespace }))
        }
        free(line)
        self.lines = lines
    }
}
