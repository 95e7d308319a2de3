import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

/// How a finished part file gets its final name: in one step, never over a file that appeared
/// meanwhile unless asked to replace.
@Suite("Publishing a finished file")
struct PublishTests {
    let directory: String

    init() throws {
        directory = try makeTemporaryDirectory("swoop-publish")
    }

    func write(_ name: String, _ text: String) throws -> String {
        let path = directory + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    func read(_ path: String) -> String? {
        (try? Data(contentsOf: URL(fileURLWithPath: path))).map { String(decoding: $0, as: UTF8.self) }
    }

    func inode(_ path: String) -> UInt64? {
        var info = stat()
        return stat(path, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    @Test func thePartFileBecomesTheFinalFile() throws {
        let part = try write("a.bin.swoop", "bytes")
        let before = inode(part)
        try FileSystem.publish(part, as: directory + "/a.bin", replace: false)
        #expect(!FileSystem.exists(part))
        #expect(read(directory + "/a.bin") == "bytes")
        #expect(inode(directory + "/a.bin") == before)
    }

    @Test func aFileThatAppearedMeanwhileIsNeverReplaced() throws {
        let part = try write("b.bin.swoop", "download")
        let final = try write("b.bin", "someone else's")
        #expect {
            try FileSystem.publish(part, as: final, replace: false)
        } throws: { error in
            let error = try #require(error as? SwoopError)
            return error.code == .destinationExists && error.message.contains("the download is kept in \(part)")
        }
        #expect(read(final) == "someone else's")
        #expect(read(part) == "download")
    }

    @Test func overwriteReplacesIt() throws {
        let part = try write("c.bin.swoop", "download")
        let final = try write("c.bin", "old")
        try FileSystem.publish(part, as: final, replace: true)
        #expect(read(final) == "download")
        #expect(!FileSystem.exists(part))
    }
}
