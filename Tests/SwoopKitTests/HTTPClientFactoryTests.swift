import AsyncHTTPClient
import Testing

@testable import SwoopKit

/// How the HTTP clients are made.
@Suite("HTTP clients")
struct HTTPClientFactoryTests {
    /// With no tracer set up (the process never bootstrapped `InstrumentationSystem`), a client has
    /// none: AsyncHTTPClient would otherwise open a no-op span and build its attributes for every
    /// request.
    @Test func aClientOpensNoSpansWhenNoTracerIsSetUp() async throws {
        let client = try HTTPClientFactory.make(Configuration())
        #expect(client.tracer == nil)
        try await client.shutdown()
    }
}
