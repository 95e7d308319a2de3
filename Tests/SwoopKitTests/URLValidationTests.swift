import Foundation
import Testing

@testable import SwoopKit

/// ``DownloadRequest/validate(_:)`` parses a URL once (`URL(string:)`); it must accept, refuse and
/// encode exactly as the reading through `URLComponents(string:)` it replaced.
@Suite("DownloadRequest.validate: one parse, the components' reading")
struct URLValidationTests {
    /// The reading `validate` replaced: the components, their host range, then their URL.
    private func componentsReading(_ text: String) -> URL? {
        guard let components = URLComponents(string: text), let scheme = components.scheme,
            ["http", "https"].contains(scheme.lowercased()), let host = components.rangeOfHost, !host.isEmpty
        else { return nil }
        return components.url
    }

    @Test(arguments: [
        "http://a.com/x", "https://a.com", "HTTP://A.COM/", "http://1.2.3.4/", "http://[::1]:80/x", "http://a.com:8080",
        "http://user:pw@a.com/", "http://@a.com/", "http://a.com?q=1#f", "http://%41.com/", "http://a.com/%41",
        // Encoded as the components encoded them: spaces, quotes, brackets, a stray %, a second #.
        "http://a.com/a b", "http://a.com/%zz", "http://a.com/x%", "http://a.com/x?%", "http://a.com/\"x\"",
        "http://a.com/<x>", "http://a.com/{x}", "http://a.com/[x]", "http://a.com/x?[y]", "http://a.com/#frag#2",
        "http://a.com/x\ty", "http://a.com/\u{7F}", "http://a.com/\u{FC}",
        // Punycode for a host that is not ASCII.
        "http://b\u{FC}cher.de/x",
    ])
    func acceptsAndEncodesAsTheComponentsDid(text: String) throws {
        let expected = try #require(componentsReading(text))
        #expect(try DownloadRequest.validate(text).absoluteString == expected.absoluteString)
    }

    @Test(arguments: [
        ("http:///x", SwoopError.Code.invalidURL), ("http://user@/x", .invalidURL), ("http:a.com", .invalidURL),
        ("http://a b.com/", .invalidURL), ("http://[::1/x", .invalidURL), ("http:// a.com", .invalidURL), ("a.com/x", .invalidURL),
        ("", .invalidURL), ("::nonsense", .invalidURL), (":x", .invalidURL), ("://a.com/x", .invalidURL), ("ftp://a.com", .unsupportedScheme),
    ])
    func refusesWhatTheComponentsRefused(text: String, code: SwoopError.Code) {
        #expect(componentsReading(text) == nil)
        let error = #expect(throws: SwoopError.self) { try DownloadRequest.validate(text) }
        #expect(error?.code == code)
    }
}
