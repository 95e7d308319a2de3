/// A JSON-RPC 2.0 error as aria2 sends it: `{"code": …, "message": …}`.
public struct RPCError: Error, Sendable, Hashable {
    public var code: Int
    public var message: String

    public init(code: Int, message: String) {
        self.code = code
        self.message = message
    }

    /// An error of a method (aria2's code 1): a bad parameter, an unknown GID, a refused option.
    public static func method(_ message: String) -> RPCError { RPCError(code: 1, message: message) }
    public static let unauthorized = RPCError(code: 1, message: "Unauthorized")
    public static let parseError = RPCError(code: -32700, message: "Parse error.")
    public static let invalidRequest = RPCError(code: -32600, message: "Invalid Request.")
    public static let methodNotFound = RPCError(code: -32601, message: "Method not found.")
    public static let invalidParams = RPCError(code: -32602, message: "Invalid params.")

    /// The HTTP status aria2 answers a single call that failed with: front ends read it.
    public var httpStatus: Int {
        switch code {
        case 1, -32600: return 400
        case -32601: return 404
        default: return 500
        }
    }

    var json: JSONValue {
        .object(["code": .integer(Int64(code)), "message": .string(message)])
    }
}

/// One call: a method, its parameters and the id to answer with.
public struct RPCCall: Sendable, Hashable {
    public var id: JSONValue
    public var method: String
    public var params: [JSONValue]

    public init(id: JSONValue = .null, method: String, params: [JSONValue] = []) {
        self.id = id
        self.method = method
        self.params = params
    }
}

/// What a request body holds: one call, a batch of calls, or something that is not a call.
public enum RPCRequest: Sendable {
    case single(Result<RPCCall, RPCError>)
    case batch([Result<RPCCall, RPCError>])

    /// Reads a request body (or a WebSocket message).
    ///
    /// Not JSON: a parse error. JSON that is not a call (no `method` string, `params` not an array)
    /// or an empty batch: an invalid request, with the call's id when it had one. The
    /// `"jsonrpc": "2.0"` member is not required (aria2 does not), and a call without an id is
    /// answered with a `null` id, as aria2 does.
    public static func parse(_ body: some Collection<UInt8>) -> RPCRequest {
        guard let value = JSONValue.parse(body) else { return .single(.failure(.parseError)) }
        if case .array(let elements) = value {
            guard !elements.isEmpty else { return .single(.failure(.invalidRequest)) }
            return .batch(elements.map(call))
        }
        return .single(call(value))
    }

    static func call(_ value: JSONValue) -> Result<RPCCall, RPCError> {
        guard let members = value.object, let method = members["method"]?.string else { return .failure(.invalidRequest) }
        let id = members["id"] ?? .null
        switch members["params"] {
        case nil, .null?:
            return .success(RPCCall(id: id, method: method))
        case .array(let params)?:
            return .success(RPCCall(id: id, method: method, params: params))
        default:
            return .failure(.invalidParams)
        }
    }
}

/// An answer to one call.
public struct RPCResponse: Sendable, Hashable {
    public var id: JSONValue
    public var result: Result<JSONValue, RPCError>

    public init(id: JSONValue, result: Result<JSONValue, RPCError>) {
        self.id = id
        self.result = result
    }

    public var json: JSONValue {
        switch result {
        case .success(let value): return .object(["id": id, "jsonrpc": .string("2.0"), "result": value])
        case .failure(let error): return .object(["id": id, "jsonrpc": .string("2.0"), "error": error.json])
        }
    }

    /// The HTTP status of a single answer (a batch is always 200).
    public var httpStatus: Int {
        switch result {
        case .success: return 200
        case .failure(let error): return error.httpStatus
        }
    }
}

/// A notification the server sends to every WebSocket session: no id.
public struct RPCNotification: Sendable, Hashable {
    public var method: String
    public var params: [JSONValue]

    public init(method: String, params: [JSONValue]) {
        self.method = method
        self.params = params
    }

    public var json: JSONValue {
        .object(["jsonrpc": .string("2.0"), "method": .string(method), "params": .array(params)])
    }
}
