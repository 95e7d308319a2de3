import Foundation
import SwoopTesting
import Testing

@Suite("swoop daemon over a WebSocket (the binary)", .timeLimit(.minutes(2)), .enabled(if: Interop.isAvailable))
struct DaemonWebSocketTests {
    /// A Python WebSocket client (websocket-client, which aria2p brings): sends each message, then
    /// prints every message received (one per line) until `seconds` pass without one.
    static let client = """
        import json, sys, websocket
        ws = websocket.create_connection(sys.argv[1], timeout=float(sys.argv[2]))
        for message in sys.argv[3:]:
            ws.send(message)
        try:
            while True:
                print(ws.recv(), flush=True)
        except websocket.WebSocketTimeoutException:
            pass
        """

    func exchange(_ daemon: DaemonFixture, _ messages: [String], quiet seconds: Double = 2) async throws -> [[String: Any]] {
        let result = try await SwoopBinary.run(
            ["python3", "-c", Self.client, "ws://127.0.0.1:\(daemon.port)/jsonrpc", String(seconds)] + messages,
            in: daemon.root, executable: "/usr/bin/env", timeout: .seconds(60)
        )
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdoutLines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test func callsNeedTheTokenAndASessionGetsNotifications() async throws {
        let server = try await TestServer.start()
        defer { Task { try? await server.shutdown() } }
        server.serve("/w.bin", Resource(body: Resource.random(size: 1000, seed: 9), etag: "\"w\""))
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        let replies = try await exchange(daemon, [
            #"{"jsonrpc":"2.0","id":1,"method":"aria2.getGlobalStat","params":["token:wrong"]}"#,
            #"{"jsonrpc":"2.0","id":2,"method":"aria2.addUri","params":["token:s3cret",["\#(server.url("/w.bin"))"]]}"#,
        ])
        let byID = Dictionary(replies.compactMap { reply in (reply["id"] as? Int).map { ($0, reply) } }, uniquingKeysWith: { a, _ in a })
        #expect((byID[1]?["error"] as? [String: Any])?["message"] as? String == "Unauthorized")
        let gid = try #require(byID[2]?["result"] as? String)
        // Notifications have no id, and carry the GID.
        let notifications = replies.filter { $0["id"] == nil }
        let methods = notifications.compactMap { $0["method"] as? String }
        #expect(methods.contains("aria2.onDownloadStart"))
        #expect(methods.contains("aria2.onDownloadComplete"))
        for notification in notifications {
            #expect((notification["params"] as? [[String: String]]) == [["gid": gid]])
        }
    }

    @Test func aMessageOverOneMebibyteClosesTheSession() async throws {
        let daemon = try await DaemonFixture.start()
        defer { Task { _ = await daemon.stop() } }
        let script = """
            import sys, websocket
            ws = websocket.create_connection(sys.argv[1], timeout=10)
            ws.send("[" + " " * (2 << 20) + "]")
            try:
                opcode, data = ws.recv_data(control_frame=True)
                print(opcode, int.from_bytes(data[:2], "big") if len(data) >= 2 else None)
            except Exception as error:
                print("closed", type(error).__name__)
            """
        let result = try await SwoopBinary.run(
            ["python3", "-c", script, "ws://127.0.0.1:\(daemon.port)/jsonrpc"], in: daemon.root, executable: "/usr/bin/env", timeout: .seconds(60)
        )
        // A close frame (opcode 8) with status 1009, "message too big", or, when the client is still
        // sending as the server closes, a reset: never an answer.
        let line = try #require(result.stdoutLines.first)
        #expect(line == "8 1009" || line.hasPrefix("closed "), "\(result.stdout) \(result.stderr)")
        // The daemon goes on serving.
        #expect(try await daemon.result("aria2.getVersion") != nil)
    }
}
