import Foundation
import SwoopTesting
import Testing

@testable import SwoopKit

/// The shortcuts taken for the common case (plain names, clean paths, ids) give exactly what the
/// general code gives.
@Suite("Fast paths agree with the general code")
struct FastPathTests {
    @Test func plainASCIINamesSanitizeAsTheScalarPathDoes() {
        var random = SplitMix(seed: 7)
        // Printable ASCII and the edge bytes around it, in names of 0 to 300 bytes.
        let alphabet = Array(" !\"#$%&'()*+,-./0123456789:;<=>?@ABCXYZ[\\]^_`abcxyz{|}~\t\u{7F}".unicodeScalars)
        var names = ["a.bin", ".", "..", "...", " x", "x ", "x.", ".bashrc", "a/b", "a\\b", "", String(repeating: "n", count: 249),
                     String(repeating: "n", count: 250), "tar.gz", "résumé.pdf"]
        for _ in 0..<5_000 {
            let length = Int(random.next() % 300)
            names.append(String(String.UnicodeScalarView((0..<length).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })))
        }
        for name in names {
            #expect(FileNaming.sanitize(name) == FileNaming.sanitizeScalars(name), "\(name.debugDescription)")
        }
    }

    @Test(arguments: [
        ("/", true), ("/a", true), ("/a/b.c", true), ("/a/.hidden", true), ("/a/...", true), ("/a/..b", true),
        ("", false), ("a", false), ("a/b", false), ("~/x", false), ("//", false), ("/a/", false), ("/a//b", false),
        ("/a/./b", false), ("/a/../b", false), ("/a/.", false), ("/a/..", false), ("/.", false), ("/..", false),
        ("/./a", false),
    ])
    func cleanAbsolutePathsAreToldFromTheirBytes(path: String, clean: Bool) {
        #expect(DownloadRequest.isCleanAbsolute(path) == clean)
        if clean { #expect(DownloadRequest.absolute(path) == (path as NSString).standardizingPath) }
    }
}
