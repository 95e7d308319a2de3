import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

/// A URL's port outside 1–65535, or a header name that is not a token, is one clear error wherever
/// it comes from: NIO traps on either, so none may reach it (a crash loop for a stored one).
@Suite("Requests that cannot be sent: URL ports outside 1–65535, bad header names, stored settings out of range", .timeLimit(.minutes(1)))
struct UnsendableRequestTests {
    @Test(arguments: [
        "http://127.0.0.1:99999/x", "http://127.0.0.1:65536/x", "https://example.com:0/x", "http://[::1]:70000/x",
        // Too large for an `Int`: Foundation reads no port at all, and port 80 was used.
        "http://127.0.0.1:99999999999999999999/x", "http://[::1]:9223372036854775808/x",
    ])
    func aPortOutOfRangeIsAnInvalidURL(url: String) throws {
        let port = try #require(url.split(separator: ":").last?.split(separator: "/").first)
        let error = try #require(throws: SwoopError.self) { try DownloadRequest.validate(url) }
        #expect(error.code == .invalidURL)
        #expect(error.message == "invalid URL (the port \(port) is not a number from 1 to 65535): \(url)")
    }

    @Test(arguments: ["http://127.0.0.1:1/x", "http://127.0.0.1:65535/x", "http://127.0.0.1/x", "https://[::1]:8443/x"])
    func aPortInRangeOrNoneIsValid(url: String) throws {
        #expect(try DownloadRequest.validate(url).absoluteString == url)
    }

    @Test(arguments: [("http://127.0.0.1:99999/b", "99999"), ("//127.0.0.1:99999999999999999999/b", "99999999999999999999")])
    func aRedirectToAPortOutOfRangeFailsNamingIt(location: String, port: String) async throws {
        let f = try await Fixture.make()
        defer { f.stop() }
        f.server.setDefault("/a", .redirect(status: 302, location: location))
        let (result, _) = await f.download(try f.request("/a"))
        guard case .failure(let error) = result else { Issue.record("should fail"); return }
        #expect(error.code == .redirect)
        #expect(error.message == "invalid redirect Location '\(location)' from \(f.server.url("/a")): the port \(port) is not a number from 1 to 65535")
        #expect(f.files().isEmpty)
    }

    /// A record stored with such a URL (by an older swoop, or edited on disk) fails that download
    /// with the error, and the queue goes on with the rest.
    @Test func aStoredRecordWithAPortOutOfRangeFailsAndTheRestRun() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        _ = f.serve("/mirrored.bin", size: 10_000)
        let body = f.serve("/good.bin", size: 10_000, seed: 2)
        let store = InMemoryDownloadStore()
        var bad = DownloadRecord(url: "http://127.0.0.1:99999/bad.bin", directory: f.directory, requestedName: "", bootID: FileSystem.bootID)
        bad.state = .paused
        try store.save(bad)
        var badMirror = f.record("/mirrored.bin")
        badMirror.state = .paused
        badMirror.mirrors = ["http://127.0.0.1:70000/mirrored.bin"]
        try store.save(badMirror)
        let run = try f.start(store: store)
        defer { Task { await run.stop() } }
        try await run.manager.resume(bad.id)
        try await run.manager.resume(badMirror.id)
        let good = try await run.manager.add(f.request("/good.bin"))
        #expect(await run.waitForTerminal([bad.id, badMirror.id, good]))
        let errors = [bad.id, badMirror.id].map { id in
            run.events.terminal(id).compactMap { event -> String? in
                guard case .failed(_, let error) = event else { return nil }
                return error.message
            }
        }
        #expect(errors == [
            ["invalid URL (the port 99999 is not a number from 1 to 65535): http://127.0.0.1:99999/bad.bin"],
            ["invalid URL (the port 70000 is not a number from 1 to 65535): http://127.0.0.1:70000/mirrored.bin"],
        ])
        #expect(run.events.terminal(good).map(\.caseName) == ["completed"])
        #expect(sha256(file: f.path("good.bin")) == sha256(body))
        #expect(f.server.requests(to: "/good.bin").count == 1)
        #expect(f.server.requests(to: "/mirrored.bin").isEmpty)
        await run.stop()
    }

    /// Settings stored out of range (a record edited on disk) fail that download, naming the
    /// setting: an idle timeout of 1e308 s trapped, 100,000 connections of 1 byte each spun.
    @Test(arguments: [
        (DownloadSettings.Key.idle, "the idle timeout must be more than 0 and at most 1000000 seconds (got 1e+308)"),
        (.connections, "connections must be between 1 and 64 (got 100000)"),
    ])
    func storedSettingsOutOfRangeFailTheDownload(setting: DownloadSettings.Key, message: String) async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let error = await Self.failureOfStored(f, "/s.bin") { record in
            switch setting {
            case .idle: record.settings.idleTimeout = 1e308
            case .connections: (record.settings.maxConnections, record.settings.minSplitSize) = (100_000, 1)
            }
        }
        #expect(error?.message == message)
        #expect(f.server.requests.isEmpty)
    }

    /// Stores a paused record of `path` changed by `change`, resumes it and returns how it failed
    /// (`nil`, with an issue recorded, when it did not).
    static func failureOfStored(_ f: ManagerFixture, _ path: String, _ change: (inout DownloadRecord) -> Void) async -> SwoopError? {
        _ = f.serve(path, size: 1_000)
        let store = InMemoryDownloadStore()
        var record = f.record(path)
        record.state = .paused
        change(&record)
        do {
            try store.save(record)
            let run = try f.start(store: store)
            defer { Task { await run.stop() } }
            try await run.manager.resume(record.id)
            #expect(await run.waitForTerminal([record.id]))
            await run.stop()
            guard case .failed(_, let error) = run.events.terminal(record.id).first else {
                Issue.record("not failed: \(run.events.terminal(record.id))")
                return nil
            }
            return error
        } catch {
            Issue.record("\(error)")
            return nil
        }
    }

    /// A name that cannot be used says why (it said only "invalid output file name: bbbb…").
    @Test(arguments: [
        (String(repeating: "b", count: 250), "longer than 249 bytes (250; the part file adds .swoop)"),
        ("..", "not a file's name"),
        ("a\nb", "it has characters a file name cannot have here"),
    ])
    func aFileNameThatCannotBeUsedSaysWhy(name: String, why: String) {
        let error = #expect(throws: SwoopError.self) { try DownloadRequest(url: "http://127.0.0.1/x", directory: "/tmp", fileName: name) }
        #expect(error?.message == "invalid output file name \(name.debugDescription): \(why)")
    }

    @Test func aHeaderNameIsATokenAndAValueHasNoControlCharacters() {
        #expect(HTTPHeaderField.problem(name: "X-Ok_1!#$%&'*+.^`|~", value: "é and tabs\tare fine") == nil)
        #expect(HTTPHeaderField.problem(name: "é", value: "x") == "a header name cannot have 'é'")
        #expect(HTTPHeaderField.problem(name: "(", value: "x") == "a header name cannot have '('")
        #expect(HTTPHeaderField.problem(name: "A\u{1}", value: "x") == "a header name cannot have '\\u{01}'")
        #expect(HTTPHeaderField.problem(name: "", value: "x") == "the name is empty")
        #expect(HTTPHeaderField.problem(name: "A", value: "a\r\nb") == "a header value cannot have control characters")
    }

    /// A header stored with a name NIO would trap on fails its download, naming it.
    @Test func aStoredHeaderThatCannotBeSentFailsTheDownload() async throws {
        let f = try await ManagerFixture.make()
        defer { f.stop() }
        let error = await Self.failureOfStored(f, "/h.bin") { $0.headers = [HTTPHeaderField(name: "é", value: "x")] }
        #expect(error?.message == "cannot send the header 'é' to \(f.server.url("/h.bin")): a header name cannot have 'é'")
        #expect(f.server.requests.isEmpty)
    }
}

extension DownloadSettings {
    /// The settings the tests above store out of range.
    enum Key: Sendable { case idle, connections }
}
