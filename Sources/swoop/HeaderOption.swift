import Foundation
import SwoopKit

/// The `-H 'Name: value'` option's parsing.
enum HeaderOption {
    /// Parses each line as `Name: value`.
    ///
    /// - Throws: ``SwoopError`` (invalid argument) naming the first line that is not a header.
    static func parse(_ lines: [String]) throws -> [(name: String, value: String)] {
        try lines.map { line in
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw SwoopError(.invalidArgument, "invalid header '\(line)': expected 'Name: value'")
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, !name.contains(where: { $0.isWhitespace || $0.isNewline }), !value.contains(where: \.isNewline) else {
                throw SwoopError(.invalidArgument, "invalid header '\(line)': expected 'Name: value'")
            }
            if let problem = HTTPHeaderField.problem(name: name, value: value) {
                throw SwoopError(.invalidArgument, "invalid header '\(line)': \(problem)")
            }
            return (name, value)
        }
    }
}
