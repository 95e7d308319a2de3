import Foundation
import SwoopKit
import SwoopTesting
import Testing

/// A fleet writing into one shared directory (issue 15's second storage mode), its nodes in one
/// test process: one large file split into parts that every node fetches into the same part file,
/// finished byte-exact under its name; a node that dies loses its parts to another, which continues
/// each from what the dead node had flushed.
@Suite("Fleet: one file split across nodes in a shared directory", .timeLimit(.minutes(3)), .enabled(if: TestPhase.runsHeavy))
struct SharedDirectoryTests {
    typealias Node = FleetMemberTests.Node

    @Test(arguments: CatalogueKind.allCases)
    func threeNodesFetchPartsOfOneFileAndItIsByteExact(kind: CatalogueKind) async throws {
        let server = try await TestServer.start()
        let body = Resource.random(size: 24 << 20, seed: 515)
        server.serve("/big.iso", Resource(body: body, etag: "\"big\""))
        server.setDefault("/big.iso", .throttle(bytesPerSecond: 6 << 20))
        let shared = try makeTemporaryDirectory("swoop-shared")
        let fleet = try await kind.makeFleet(4)
        let nodes = try (0..<3).map { try Node("node\($0)", catalogue: fleet[$0], maxActive: 3, shared: shared, partSize: 2 << 20) }
        let user = fleet[3]
        let item = CatalogueItem(urls: [server.url("/big.iso")])
        try await user.add([item])
        let done = try await until { try await user.counts() == [.completed: 1] }
        let entry = try await user.entries(ids: [item.id]).first
        let parts = try await user.parts(of: item.id)
        for node in nodes { await node.stop() }
        await user.close()
        try await server.shutdown()
        try #require(done, "\(String(describing: entry))")

        #expect(sha256Hex(file: shared + "/big.iso") == sha256Hex(body))
        #expect(try FileManager.default.contentsOfDirectory(atPath: shared) == ["big.iso"], "no part file left")
        #expect(entry?.fileName == "big.iso" && entry?.totalBytes == 24 << 20)
        #expect(parts.count == 12 && parts.allSatisfy { $0.state == .completed })
        #expect(Set(parts.compactMap(\.node)).count >= 2, "the parts were shared: \(parts.map { $0.node ?? "" })")
        // One probe of a byte, then each part once, each from its first byte.
        let requests = server.requests(to: "/big.iso")
        #expect(requests.count == 13, "\(requests.map { $0.header("Range") ?? "-" })")
        #expect(server.bodyBytesSent(to: "/big.iso") == (24 << 20) + 1)
        #expect(requests.dropFirst().allSatisfy { $0.header("If-Range") == "\"big\"" })
    }

    @Test(arguments: CatalogueKind.allCases)
    func aNodeThatDiesLosesItsPartsWhichContinueFromWhatItFlushed(kind: CatalogueKind) async throws {
        let server = try await TestServer.start()
        let length = 12 << 20
        let body = Resource.random(size: length, seed: 616)
        server.serve("/data.bin", Resource(body: body, etag: "\"data\""))
        server.setDefault("/data.bin", .throttle(bytesPerSecond: 1 << 20))
        let shared = try makeTemporaryDirectory("swoop-shared")
        let fleet = try await kind.makeFleet(3)
        let user = fleet[2]
        let first = try Node("first", catalogue: fleet[0], maxActive: 3, lease: .seconds(3), shared: shared, partSize: 4 << 20, partFlushBytes: 256 << 10)
        let item = CatalogueItem(urls: [server.url("/data.bin")])
        try await user.add([item])
        // The first node split it and fetches all three parts; each has flushed some of its bytes.
        let underWay = try await until(.seconds(30)) {
            let parts = try await user.parts(of: item.id)
            return parts.count == 3 && parts.allSatisfy { $0.node == "first" && $0.completedBytes > 0 }
        }
        try #require(underWay)
        await first.die()
        let flushedByFirst = try await user.parts(of: item.id).map(\.completedBytes)
        let second = try Node("second", catalogue: fleet[1], maxActive: 3, lease: .seconds(3), shared: shared, partSize: 4 << 20, partFlushBytes: 256 << 10)
        let done = try await until { try await user.counts() == [.completed: 1] }
        let entry = try await user.entries(ids: [item.id]).first
        let parts = try await user.parts(of: item.id)
        await second.stop()
        await user.close()
        try await server.shutdown()
        try #require(done, "\(String(describing: entry)) \(parts.map { "\($0.state) \($0.completedBytes)" })")

        #expect(sha256Hex(file: shared + "/data.bin") == sha256Hex(body))
        #expect(entry?.node == "second" && parts.allSatisfy { $0.node == "second" && $0.state == .completed })
        // The second node asked each part from where the first had flushed it (its If-Range kept).
        let continued = server.requests(to: "/data.bin").suffix(3).compactMap { $0.header("Range") }.sorted()
        let expected = zip([0, 4 << 20, 8 << 20], flushedByFirst).map { "bytes=\($0 + $1)-\($0 + (4 << 20) - 1)" }.sorted()
        #expect(continued == expected)
        // What it fetched again is at most what the first wrote and had not flushed (or reported).
        let again = server.bodyBytesSent(to: "/data.bin") - 1 - length
        #expect(again >= 0 && again <= 3 * (512 << 10) + 3 * (1 << 20), "\(again) bytes fetched twice")
    }

    @Test func twoFilesOfOneNameAreSplitIntoTwoPartFilesNeverOne() async throws {
        let server = try await TestServer.start()
        let bodies = [Resource.random(size: 8 << 20, seed: 701), Resource.random(size: 8 << 20, seed: 702)]
        for (index, body) in bodies.enumerated() {
            server.serve("/\(index)/same.bin", Resource(body: body, etag: "\"s\(index)\""))
            server.setDefault("/\(index)/same.bin", .throttle(bytesPerSecond: 8 << 20))
        }
        let shared = try makeTemporaryDirectory("swoop-shared")
        let fleet = try await CatalogueKind.sqlite.makeFleet(3)
        let nodes = try (0..<2).map { try Node("node\($0)", catalogue: fleet[$0], maxActive: 4, shared: shared, partSize: 1 << 20) }
        let items = (0..<2).map { CatalogueItem(urls: [server.url("/\($0)/same.bin")]) }
        try await fleet[2].add(items)
        let done = try await until { try await fleet[2].counts() == [.completed: 2] }
        let entries = try await fleet[2].entries(ids: items.map(\.id))
        for node in nodes { await node.stop() }
        await fleet[2].close()
        try await server.shutdown()
        try #require(done)
        #expect(Set(entries.compactMap(\.fileName)) == ["same.bin", "same.1.bin"])
        for (entry, body) in zip(entries, bodies) {
            #expect(sha256Hex(file: shared + "/" + (entry.fileName ?? "")) == sha256Hex(body), "\(entry.fileName ?? "")")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: shared).sorted() == ["same.1.bin", "same.bin"])
    }

    @Test func aSmallFileTakenOverFromADeadNodeReusesItsPartFile() async throws {
        let server = try await TestServer.start()
        let body = Resource.random(size: 3 << 20, seed: 703)
        server.serve("/small.bin", Resource(body: body, etag: "\"small\""))
        server.setDefault("/small.bin", .throttle(bytesPerSecond: 512 << 10))
        let shared = try makeTemporaryDirectory("swoop-shared")
        let fleet = try await CatalogueKind.sqlite.makeFleet(3)
        let item = CatalogueItem(urls: [server.url("/small.bin")])
        // Under two parts: the first node runs it whole, and dies with its part file half written.
        let first = try Node("first", catalogue: fleet[0], lease: .seconds(3), shared: shared, partSize: 4 << 20)
        try await fleet[2].add([item])
        let underWay = try await until(.seconds(30)) {
            try await fleet[2].entries(ids: [item.id]).first.map { $0.fileName == "small.bin" && $0.completedBytes > 0 } ?? false
        }
        try #require(underWay)
        await first.die()
        let second = try Node("second", catalogue: fleet[1], lease: .seconds(3), shared: shared, partSize: 4 << 20)
        let done = try await until { try await fleet[2].counts() == [.completed: 1] }
        let parts = try await fleet[2].parts(of: item.id)
        await second.stop()
        await fleet[2].close()
        try await server.shutdown()
        try #require(done)
        #expect(sha256Hex(file: shared + "/small.bin") == sha256Hex(body))
        #expect(try FileManager.default.contentsOfDirectory(atPath: shared) == ["small.bin"], "no small.1.bin, no part file left")
        // Fetched as one part (by the second node; or, on a machine loaded enough that the first
        // node's own lease ran out before it died, by the first, which then took it over itself).
        #expect(parts.count == 1 && parts.allSatisfy { $0.state == .completed }, "\(parts.map { "\($0.node ?? "-") \($0.state)" })")
    }

    @Test func aFileThatChangesMidWayFailsAndIsSplitAnewWhenResumedNeverSpliced() async throws {
        let server = try await TestServer.start()
        let old = Resource.random(size: 8 << 20, seed: 801)
        let new = Resource.random(size: 8 << 20, seed: 802)
        server.serve("/moving.bin", Resource(body: old, etag: "\"old\""))
        server.setDefault("/moving.bin", .throttle(bytesPerSecond: 2 << 20))
        let shared = try makeTemporaryDirectory("swoop-shared")
        let fleet = try await CatalogueKind.sqlite.makeFleet(2)
        let node = try Node("node", catalogue: fleet[0], maxActive: 2, shared: shared, partSize: 1 << 20)
        let item = CatalogueItem(urls: [server.url("/moving.bin")])
        try await fleet[1].add([item])
        let someDone = try await until(.seconds(30)) { try await fleet[1].parts(of: item.id).contains { $0.state == .completed } }
        try #require(someDone)
        // The file changes on the server: every later answer is the new one's (If-Range does not match).
        server.serve("/moving.bin", Resource(body: new, etag: "\"new\""))
        let failed = try await until(.seconds(30)) { try await fleet[1].entries(ids: [item.id]).first?.state == .failed }
        let error = try await fleet[1].entries(ids: [item.id]).first?.error ?? ""
        let partsAfterFailure = try await fleet[1].parts(of: item.id).map(\.state)
        #expect(failed, "\(partsAfterFailure)")
        #expect(error.contains("answered with the whole file") && error.contains("the file changed on the server"), "\(error)")
        #expect(!partsAfterFailure.contains(.waiting) && !partsAfterFailure.contains(.active), "its other parts stopped: \(partsAfterFailure)")
        #expect(!FileManager.default.fileExists(atPath: shared + "/moving.bin"), "no file under its name")

        _ = try await fleet[1].control(.resume, ids: [item.id])
        let done = try await until { try await fleet[1].counts() == [.completed: 1] }
        await node.stop()
        await fleet[1].close()
        try await server.shutdown()
        try #require(done)
        // Split anew and fetched whole from the new file: not a byte of the old one in it.
        #expect(sha256Hex(file: shared + "/moving.bin") == sha256Hex(new))
        #expect(try FileManager.default.contentsOfDirectory(atPath: shared) == ["moving.bin"], "the old part file went with the old split")
    }
}
