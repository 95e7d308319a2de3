import ArgumentParser
import SwoopKit

/// The exit codes scripts can rely on (also in the README).
enum ExitStatus {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 2
    static let fileSystem: Int32 = 3
    static let network: Int32 = 4
    static let httpStatus: Int32 = 5
    static let verification: Int32 = 6
    static let inUse: Int32 = 7
    /// A download was paused or removed by another command (`swoop pause`, `swoop rm`): not there.
    static let stopped: Int32 = 8
    static let interrupted: Int32 = 130
    static let terminated: Int32 = 143

    static let summary =
        "0 ok, 1 other error, 2 usage or bad input, 3 file system, 4 network/TLS/timeout, 5 HTTP error status, 6 checksum or invalid response, 7 in use by another swoop, 8 paused or removed by another command, 130 interrupted (SIGINT), 143 terminated (SIGTERM)."

    static func code(for error: SwoopError) -> Int32 {
        switch error.code {
        case .invalidURL, .unsupportedScheme, .invalidArgument, .notFound: return usage
        case .fileSystem, .diskFull, .destinationExists: return fileSystem
        case .network, .timeout, .tls, .redirect: return network
        case .httpStatus: return httpStatus
        case .checksumMismatch, .invalidResponse: return verification
        case .inUse: return inUse
        case .cancelled: return interrupted
        default: return failure
        }
    }
}
