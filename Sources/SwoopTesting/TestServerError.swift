/// An error from the SwoopTesting fixtures.
public struct TestServerError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, as a value tests can compare.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case bindFailed
            case certificateGenerationFailed
            case startFailed
        }

        private let base: Base

        /// The server could not listen on 127.0.0.1.
        public static let bindFailed = Code(base: .bindFailed)
        /// `openssl` could not make the test certificate.
        public static let certificateGenerationFailed = Code(base: .certificateGenerationFailed)
        /// A server the tests run (PostgreSQL) could not be made or started.
        public static let startFailed = Code(base: .startFailed)

        /// The code's name.
        public var description: String {
            switch self.base {
            case .bindFailed: "bindFailed"
            case .certificateGenerationFailed: "certificateGenerationFailed"
            case .startFailed: "startFailed"
            }
        }
    }

    /// What went wrong.
    public var code: Code
    /// A sentence for a person reading a test failure.
    public var message: String
    /// The underlying error, if any.
    public var cause: (any Error)?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: What went wrong.
    ///   - message: A sentence for a person.
    ///   - cause: The underlying error, if any.
    public init(code: Code, message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    /// The code and message, and the cause when there is one.
    public var description: String {
        var text = "TestServerError.\(self.code): \(self.message)"
        if let cause = self.cause {
            text += " (\(cause))"
        }
        return text
    }
}
