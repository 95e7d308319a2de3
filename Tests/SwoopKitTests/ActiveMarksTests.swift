import Foundation
import NIOConcurrencyHelpers
import SwoopTesting
import Testing

@testable import SwoopKit

/// A download shows `active` in its store while its first request waits for an answer; a quick one
/// records `active` with its first save and is never marked separately.
@Suite("Active marks", .timeLimit(.minutes(1)))
struct ActiveMarksTests {
    @Test func aDownloadWaitingForItsFirstAnswerIsMarkedActive() async throws {
        var f = try await Fixture.make()
        defer { f.stop() }
        f.configuration.timeouts.idle = .seconds(30)
        f.configuration.durability.activeMarkDelay = .milliseconds(100)
        let silent = try SilentListener()
        defer { silent.close() }
        let marks = NIOLockedValueBox(0)
        let store = ObservedStore(onMarkActive: { _ in marks.withLockedValue { $0 += 1 } })
        let request = try DownloadRequest(url: "http://127.0.0.1:\(silent.port)/slow.bin", directory: f.directory)
        let fixture = f
        let download = Task { await fixture.download(request, store: store) }
        // Bounded: the mark is due after `activeMarkDelay` (0.1 s).
        var state: Download.State?
        for _ in 0..<100 {
            state = try store.all().first?.state
            if state == .active { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(state == .active)
        #expect(marks.withLockedValue { $0 } == 1)
        download.cancel()
        let (result, _) = await download.value
        #expect(throws: SwoopError.self) { try result.get() }
        #expect(try store.all().first?.state == .paused)
    }

    @Test func aDownloadThatSavesItsProgressIsNoLongerPendingAndNeverMarked() async throws {
        var f = try await Fixture.make()
        defer { f.stop() }
        // Far longer than the download takes, even on a loaded machine: its own save comes first.
        f.configuration.durability.activeMarkDelay = .seconds(60)
        let body = f.serve("/quick.bin", size: 10_000)
        let marks = NIOLockedValueBox(0)
        let store = ObservedStore(onMarkActive: { _ in marks.withLockedValue { $0 += 1 } })
        let outcome = try await f.download(try f.request("/quick.bin"), store: store).result.get()
        #expect(sha256(file: f.path("quick.bin")) == sha256(body))
        #expect(!ActiveMarks.shared.isPending(outcome.download.id))
        #expect(marks.withLockedValue { $0 } == 0)
        #expect(try store.all().first?.state == .completed)
    }
}

/// A TCP port that accepts connections (the kernel completes them into the backlog) and never answers.
private struct SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 16) == 0 else { throw SwoopError(.network, "cannot listen: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { _ = Glibc.close(fd) }
}
