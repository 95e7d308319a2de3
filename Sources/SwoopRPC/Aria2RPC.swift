import Foundation
import NIOConcurrencyHelpers
import SwoopKit

/// aria2's JSON-RPC methods over a ``DownloadManager``: the same names, parameters, values and
/// errors, so that aria2's clients (aria2p, AriaNg, scripts) drive Swoop unchanged. No transport
/// here: the daemon hands it requests from HTTP and WebSocket alike.
///
/// Every call but `system.listMethods` and `system.listNotifications` carries the secret as its
/// first parameter, `"token:SECRET"`, compared in constant time; `system.multicall` carries one
/// per call.
public final class Aria2RPC: Sendable {
    /// What the daemon was started with.
    public struct Settings: Sendable {
        /// The RPC secret every call must carry.
        public var secret: String
        /// Where downloads may go.
        public var roots: DownloadRoots
        /// A fleet's shared queue: `addUri` adds there, for whichever daemon has room.
        public var catalogue: (any DownloadCatalogue)?
        /// How long a node of the fleet may be silent and still count (its speed in `getGlobalStat`):
        /// the lease, after which its downloads are another node's to take.
        public var nodeSilence: Duration = .seconds(15)
        /// This daemon's node name in the fleet: a download it runs itself is changed live.
        public var node: String?
        public init(secret: String, roots: DownloadRoots, catalogue: (any DownloadCatalogue)? = nil) {
            self.secret = secret
            self.roots = roots
            self.catalogue = catalogue
        }
    }

    /// The aria2 protocol version Swoop speaks (aria2's `getVersion` reports its own).
    public static let aria2Version = "1.37.0"

    public static let notifications = [
        "aria2.onDownloadStart", "aria2.onDownloadPause", "aria2.onDownloadStop", "aria2.onDownloadComplete",
        "aria2.onDownloadError", "aria2.onBtDownloadComplete",
    ]

    public let manager: DownloadManager
    let settings: Settings
    /// Signs and checks the links to finished files.
    public let fileLinks: FileLinks
    let sessionID: String
    /// Called by `shutdown` and `forceShutdown` after answering.
    let shutdown: @Sendable (_ force: Bool) -> Void
    /// What the notifications need to remember across events.
    struct Memory {
        /// Downloads whose start was announced and whose end was not yet.
        var started: Set<Download.ID> = []
        /// Results being forgotten (`removeDownloadResult`, `purgeDownloadResult`): their removal
        /// is no stop of a download, and aria2 announces none.
        var forgetting: Set<Download.ID> = []
    }

    private let memory = NIOLockedValueBox(Memory())
    /// `changeUri` calls, one per download at a time.
    let sourceChanges = OneAtATime<Download.ID>()

    public init(manager: DownloadManager, settings: Settings, shutdown: @escaping @Sendable (_ force: Bool) -> Void) {
        self.manager = manager
        self.settings = settings
        self.fileLinks = FileLinks(secret: settings.secret)
        self.sessionID = Download.ID.make().rawValue + Download.ID.make().rawValue
        self.shutdown = shutdown
    }

    /// The notifications aria2 would send for an event, in order: a failure that never started
    /// is announced as started first (aria2 always sends onDownloadStart), the forgetting of a
    /// result is not announced.
    public func notifications(for event: DownloadEvent) -> [RPCNotification] {
        let id = event.download.id
        return memory.withLockedValue { memory in
            switch event {
            case .started:
                memory.started.insert(id)
            case .failed:
                if memory.started.remove(id) == nil, let start = Self.notification(for: .started(event.download)) {
                    return [start] + (Self.notification(for: event).map { [$0] } ?? [])
                }
            case .removed where memory.forgetting.remove(id) != nil:
                memory.started.remove(id)
                return []
            case .paused, .completed, .alreadyComplete, .removed:
                memory.started.remove(id)
            case .added, .progress, .notice:
                break
            }
            return Self.notification(for: event).map { [$0] } ?? []
        }
    }

    /// Marks results about to be forgotten (see ``Memory/forgetting``).
    func forgetting(_ ids: [Download.ID], _ isForgetting: Bool) {
        memory.withLockedValue { memory in
            if isForgetting { memory.forgetting.formUnion(ids) } else { memory.forgetting.subtract(ids) }
        }
    }

    /// The notification aria2 sends for an event, if any.
    public static func notification(for event: DownloadEvent) -> RPCNotification? {
        let method: String
        switch event {
        case .started: method = "aria2.onDownloadStart"
        case .paused: method = "aria2.onDownloadPause"
        case .removed: method = "aria2.onDownloadStop"
        case .completed, .alreadyComplete: method = "aria2.onDownloadComplete"
        case .failed: method = "aria2.onDownloadError"
        case .added, .progress, .notice: return nil
        }
        return RPCNotification(method: method, params: [.object(["gid": .string(event.download.id.rawValue)])])
    }

    // MARK: - Requests

    /// What one request (a call, a batch, a multicall) has met so far.
    public final class Attempt: @unchecked Sendable {
        /// A call of this request carried a wrong token: every later one is refused unchecked, so
        /// that a batch or a multicall tries one secret, not thousands, per delayed answer.
        public internal(set) var wasRefused = false
        public init() {}
    }

    /// The answer to a request: one response, or one per call of a batch, in the batch's order.
    /// `attempt.wasRefused` says whether to delay it (``RPCError/unauthorized``).
    public func answer(_ request: RPCRequest, attempt: Attempt = Attempt()) async -> [RPCResponse] {
        switch request {
        case .single(let call):
            return [await answer(call, attempt)]
        case .batch(let calls):
            var responses = await addAll(calls, attempt)
            for (index, call) in calls.enumerated() where responses[index] == nil {
                responses[index] = await answer(call, attempt)
            }
            return responses.compactMap { $0 }
        }
    }

    /// The batch's `addUri` calls, added together in one store transaction (10,000 downloads added
    /// in batches cost a flush per batch, not one each); `nil` for the other calls. A batch may be
    /// answered in any order (JSON-RPC 2.0), so its adds come first.
    func addAll(_ calls: [Result<RPCCall, RPCError>], _ attempt: Attempt) async -> [RPCResponse?] {
        var responses = [RPCResponse?](repeating: nil, count: calls.count)
        var prepared: [(index: Int, id: JSONValue, add: PreparedAdd)] = []
        for (index, call) in calls.enumerated() {
            guard case .success(let call) = call, Self.knownMethods.contains(call.method), !call.method.hasPrefix("system.") else { continue }
            // Up to the first wrong token: from there on every call is refused (in the pass below,
            // which answers in order and marks the attempt).
            guard !attempt.wasRefused, tokenMatches(call) else { break }
            guard call.method == "aria2.addUri" else { continue }
            do {
                prepared.append((index, call.id, try prepareAdd(Parameters(Array(call.params.dropFirst())))))
            } catch {
                responses[index] = RPCResponse(id: call.id, result: .failure(Self.rpcError(error)))
            }
        }
        guard !prepared.isEmpty else { return responses }
        let ids: [Download.ID]
        do {
            ids = try await manager.add(contentsOf: prepared.map(\.add.request))
        } catch {
            // One refused the whole transaction: each is tried on its own, for its own answer.
            for entry in prepared { responses[entry.index] = nil }
            return responses
        }
        for (entry, id) in zip(prepared, ids) {
            do {
                responses[entry.index] = RPCResponse(id: entry.id, result: .success(try await finishAdd(id, entry.add)))
            } catch {
                responses[entry.index] = RPCResponse(id: entry.id, result: .failure(Self.rpcError(error)))
            }
        }
        return responses
    }

    /// Whether the call carries the secret and no earlier call of its request carried a wrong
    /// one; a refusal marks the attempt.
    func isAuthorized(_ call: RPCCall, _ attempt: Attempt) -> Bool {
        guard !attempt.wasRefused, tokenMatches(call) else {
            attempt.wasRefused = true
            return false
        }
        return true
    }

    /// Whether `text` is the secret (compared in constant time): for `/metrics`, whose scrapers
    /// send it as a bearer token.
    public func isSecret(_ text: String) -> Bool {
        Self.constantTimeEqual(text, settings.secret)
    }

    /// Whether the call's first parameter is `token:SECRET`.
    func tokenMatches(_ call: RPCCall) -> Bool {
        guard let token = call.params.first?.string, token.hasPrefix("token:") else { return false }
        return Self.constantTimeEqual(String(token.dropFirst(6)), settings.secret)
    }

    static func rpcError(_ error: any Error) -> RPCError {
        switch error {
        case let error as RPCError: return error
        case let error as SwoopError where error.code == .notFound:
            // One wording for an unknown GID, whichever call met it.
            return .method(error.message.hasPrefix("no download with id ") ? "No such download for GID#" + error.message.dropFirst(20) : error.message)
        case let error as SwoopError: return .method(error.message)
        default: return .method("\(error)")
        }
    }

    func answer(_ call: Result<RPCCall, RPCError>, _ attempt: Attempt) async -> RPCResponse {
        switch call {
        case .failure(let error): return RPCResponse(id: .null, result: .failure(error))
        case .success(let call): return RPCResponse(id: call.id, result: await result(of: call, attempt))
        }
    }

    /// One call's result, the secret checked first.
    public func result(of call: RPCCall, _ attempt: Attempt = Attempt()) async -> Result<JSONValue, RPCError> {
        switch call.method {
        case "system.listMethods":
            return .success(.array(Self.methods.map { .string($0) }))
        case "system.listNotifications":
            return .success(.array(Self.notifications.map { .string($0) }))
        case "system.multicall":
            return await multicall(call.params, attempt)
        default:
            guard Self.knownMethods.contains(call.method) else { return .failure(.methodNotFound) }
            guard isAuthorized(call, attempt) else { return .failure(.unauthorized) }
            do {
                return .success(try await perform(call.method, Parameters(Array(call.params.dropFirst()))))
            } catch {
                return .failure(Self.rpcError(error))
            }
        }
    }

    /// `system.multicall([{methodName, params}, …])`: `[result]` for each call that succeeded, its
    /// error object for each that failed.
    func multicall(_ params: [JSONValue], _ attempt: Attempt) async -> Result<JSONValue, RPCError> {
        guard let calls = params.first?.array else { return .failure(.method("system.multicall takes an array of calls")) }
        var results: [JSONValue] = []
        for value in calls {
            guard let members = value.object, let method = members["methodName"]?.string else {
                results.append(RPCError.method("each call needs a methodName").json)
                continue
            }
            guard method != "system.multicall" else {
                results.append(RPCError.method("system.multicall cannot be nested").json)
                continue
            }
            switch await result(of: RPCCall(method: method, params: members["params"]?.array ?? []), attempt) {
            case .success(let value): results.append(.array([value]))
            case .failure(let error): results.append(error.json)
            }
        }
        return .success(.array(results))
    }

    /// Equal texts, in a time that depends only on their lengths.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let a = Array(a.utf8), b = Array(b.utf8)
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }
}
