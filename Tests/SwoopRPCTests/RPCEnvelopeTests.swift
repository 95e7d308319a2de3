import SwoopRPC
import Testing

@Suite("JSON-RPC as aria2 speaks it: envelopes, errors and their HTTP statuses, the token")
struct RPCEnvelopeTests {
    func answer(_ body: String, _ fixture: RPCFixture) async -> [RPCResponse] {
        await fixture.rpc.answer(RPCRequest.parse(Array(body.utf8)))
    }

    func text(_ response: RPCResponse) -> String {
        String(decoding: response.json.serialized(), as: UTF8.self)
    }

    @Test func idsOfAnyTypeAreEchoedAndNoJSONRPCMemberIsNeeded() async throws {
        let fixture = try await RPCFixture.make()
        defer { Task { await fixture.stop() } }
        for id in [#""abc""#, "7", "null", "1.5", #"{"a":1}"#] {
            let responses = await answer(#"{"id":\#(id),"method":"system.listNotifications"}"#, fixture)
            #expect(responses.count == 1)
            #expect(text(responses[0]).hasPrefix(#"{"id":\#(id),"jsonrpc":"2.0","result":["aria2.onDownloadStart""#))
            #expect(responses[0].httpStatus == 200)
        }
    }

    @Test func malformedRequestsGetAria2sCodesAndStatuses() async throws {
        let fixture = try await RPCFixture.make()
        defer { Task { await fixture.stop() } }
        let cases: [(String, String, Int)] = [
            ("{not json", #"{"code":-32700,"message":"Parse error."}"#, 500),
            (#"{"id":1}"#, #"{"code":-32600,"message":"Invalid Request."}"#, 400),
            ("[]", #"{"code":-32600,"message":"Invalid Request."}"#, 400),
            ("42", #"{"code":-32600,"message":"Invalid Request."}"#, 400),
            (#"{"id":1,"method":"aria2.noSuchThing","params":["token:s3cret"]}"#, #"{"code":-32601,"message":"Method not found."}"#, 404),
            (#"{"id":1,"method":"aria2.tellActive","params":{"a":1}}"#, #"{"code":-32602,"message":"Invalid params."}"#, 500),
            (#"{"id":1,"method":"aria2.tellStatus","params":["token:s3cret",5]}"#, #"{"code":1,"message":"gid must be a string"}"#, 400),
        ]
        for (body, error, status) in cases {
            let responses = await answer(body, fixture)
            #expect(responses.count == 1)
            #expect(text(responses[0]).contains(#""error":\#(error)"#), "\(body) → \(text(responses[0]))")
            #expect(responses[0].httpStatus == status, "\(body)")
        }
    }

    @Test func aBatchAnswersEachCallInOrder() async throws {
        let fixture = try await RPCFixture.make()
        defer { Task { await fixture.stop() } }
        let responses = await answer(
            #"[{"id":"a","method":"aria2.getVersion","params":["token:s3cret"]},{"id":"b","method":"aria2.getVersion"},{"x":1}]"#, fixture)
        #expect(responses.map(\.id) == ["a", "b", .null])
        #expect(responses[0].result.errorMessage == nil)
        #expect(responses[1].result.errorMessage == "Unauthorized")
        #expect(responses[2].result.errorMessage == "Invalid Request.")
    }

    @Test func everyMethodButTheListsNeedsTheToken() async throws {
        let fixture = try await RPCFixture.make()
        defer { Task { await fixture.stop() } }
        for params: [JSONValue] in [[], ["token:wrong"], ["token:s3cre"], ["token:s3cretX"], ["s3cret"], [7]] {
            let result = await fixture.rpc.result(of: RPCCall(method: "aria2.getGlobalStat", params: params))
            #expect(result == .failure(RPCError(code: 1, message: "Unauthorized")), "\(params)")
        }
        for method in ["system.listMethods", "system.listNotifications"] {
            let result = await fixture.rpc.result(of: RPCCall(method: method))
            #expect(result.errorMessage == nil)
        }
        let methods = await fixture.rpc.result(of: RPCCall(method: "system.listMethods"))
        #expect((try methods.get().array ?? []).contains("aria2.addUri"))
        #expect(await fixture.call("aria2.getGlobalStat").errorMessage == nil)
    }

    @Test func multicallCarriesATokenPerCallAndAnswersEach() async throws {
        let fixture = try await RPCFixture.make()
        defer { Task { await fixture.stop() } }
        let calls: JSONValue = [
            ["methodName": "aria2.getSessionInfo", "params": ["token:s3cret"]],
            ["methodName": "aria2.tellStatus", "params": ["token:s3cret", "ffffffffffffffff"]],
            ["methodName": "system.listNotifications"],
            ["methodName": "aria2.getSessionInfo", "params": ["token:nope"]],
        ]
        let attempt = Aria2RPC.Attempt()
        let result = try await fixture.rpc.result(of: RPCCall(method: "system.multicall", params: [calls]), attempt).get()
        let entries = try #require(result.array)
        #expect(entries.count == 4)
        #expect(entries[0].array?.first?.object?["sessionId"]?.string?.count == 32)
        #expect(entries[1] == ["code": 1, "message": "No such download for GID#ffffffffffffffff"])
        #expect(entries[2].array?.first?.array?.count == Aria2RPC.notifications.count)
        #expect(entries[3] == ["code": 1, "message": "Unauthorized"])
        #expect(attempt.wasRefused)
    }

    /// One secret tried per request: after a wrong token, a batch or multicall refuses the rest
    /// unchecked (and the daemon delays the whole answer), so guessing stays one try a second.
    @Test func afterAWrongTokenEveryLaterCallOfTheRequestIsRefused() async throws {
        let fixture = try await RPCFixture.make()
        defer { Task { await fixture.stop() } }
        let guesses: JSONValue = .array((0..<100).map { .object(["methodName": "aria2.getSessionInfo", "params": [.string("token:guess\($0)")]]) }
            + [["methodName": "aria2.getSessionInfo", "params": ["token:s3cret"]]])
        let result = try await fixture.rpc.result(of: RPCCall(method: "system.multicall", params: [guesses])).get()
        #expect(result.array?.allSatisfy { $0 == ["code": 1, "message": "Unauthorized"] } == true)
        let batch = "[" + (0..<50).map { #"{"id":\#($0),"method":"aria2.getVersion","params":["token:guess\#($0)"]}"# }.joined(separator: ",")
            + #",{"id":99,"method":"aria2.getVersion","params":["token:s3cret"]}]"#
        let attempt = Aria2RPC.Attempt()
        let responses = await fixture.rpc.answer(RPCRequest.parse(Array(batch.utf8)), attempt: attempt)
        #expect(responses.allSatisfy { $0.result == .failure(.unauthorized) })
        #expect(attempt.wasRefused)
    }

    @Test func bitTorrentAndMetalinkMethodsSaySo() async throws {
        let fixture = try await RPCFixture.make()
        defer { Task { await fixture.stop() } }
        #expect(await fixture.call("aria2.addTorrent", "ZGF0YQ==").errorMessage == "BitTorrent is not supported: Swoop downloads over HTTP and HTTPS")
        #expect(await fixture.call("aria2.addMetalink", "ZGF0YQ==").errorMessage?.hasPrefix("addMetalink is not supported over RPC") == true)
    }

    @Test func shutdownAnswersThenAsksTheDaemonToStop() async throws {
        let fixture = try await RPCFixture.make()
        defer { Task { await fixture.stop() } }
        #expect(await fixture.value("aria2.saveSession") == "OK")
        #expect(await fixture.value("aria2.shutdown") == "OK")
        #expect(await fixture.value("aria2.forceShutdown") == "OK")
        #expect(fixture.shutdowns.calls == [false, true])
    }
}
