import NIOHTTP1

extension TestServer {
    /// What to send for one request. Pure: decided from the request, the resource and the behaviour;
    /// the channel handler only carries it out.
    struct ResponsePlan {
        /// What happens once the planned body bytes are written.
        enum Ending: Equatable {
            /// Write the end of the message, then close the connection when `close` is set.
            case complete(close: Bool)
            /// Close without ending the message; with `reset`, abort with a TCP RST.
            case cut(reset: Bool)
            /// Send nothing more and leave the connection open.
            case stall
        }

        var status: HTTPResponseStatus
        var headers: HTTPHeaders
        /// The bytes that `bodyRange` indexes; shared with the resource, never copied whole.
        var body: [UInt8]
        /// The bytes of `body` to write, in order.
        var bodyRange: Range<Int>
        var ending: Ending = .complete(close: false)
        /// Pace the body to this rate, or send it as fast as the client reads when `nil`.
        var bytesPerSecond: Int?

        /// Plans the answer to `request`.
        ///
        /// - Parameters:
        ///   - request: The request head.
        ///   - resource: The resource at the request's path, if any.
        ///   - behavior: The behaviour chosen for this request; `replaceResource` must already be applied.
        static func make(for request: HTTPRequestHead, resource: Resource?, behavior: Behavior) -> ResponsePlan {
            var plan: ResponsePlan
            switch behavior {
            case .status(let code, let headers, let body):
                plan = .simple(status: code, headers: headers, body: Array(body.utf8))
            case .redirect(let code, let location):
                plan = .simple(status: code, headers: [("Location", location)], body: [])
            default:
                if let resource {
                    plan = .serving(resource, for: request, behavior: behavior)
                } else {
                    plan = .simple(status: 404, headers: [], body: Array("not found\n".utf8))
                }
            }
            plan.adapt(to: request)
            return plan
        }

        /// A fixed status, headers and body with `Content-Length` framing.
        private static func simple(status code: Int, headers: [(String, String)], body: [UInt8]) -> ResponsePlan {
            var fields = HTTPHeaders(headers)
            if !body.isEmpty && !fields.contains(name: "content-type") {
                fields.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            }
            if !fields.contains(name: "content-length") {
                fields.add(name: "Content-Length", value: String(body.count))
            }
            return ResponsePlan(
                status: HTTPResponseStatus(statusCode: code),
                headers: fields,
                body: body,
                bodyRange: body.indices
            )
        }

        /// The answer from a resource, shaped by the behaviour.
        private static func serving(
            _ resource: Resource,
            for request: HTTPRequestHead,
            behavior: Behavior
        ) -> ResponsePlan {
            let total = resource.body.count
            var headers = self.representationHeaders(of: resource)
            if case .hugeHeaders(let bytes) = behavior {
                headers.add(name: "X-Huge", value: String(repeating: "a", count: max(0, bytes)))
            }
            if Self.isNotModified(request, resource: resource) {
                return ResponsePlan(status: .notModified, headers: headers, body: [], bodyRange: 0..<0)
            }

            let ignoresIfRange = if case .ignoreIfRange = behavior { true } else { false }
            let requested = Self.requestedRange(of: request, resource: resource, honouringIfRange: !ignoresIfRange)
            var plan = ResponsePlan(status: .ok, headers: headers, body: resource.body, bodyRange: 0..<total)
            switch behavior {
            case .wrongContentRangeStart(let claimedStart):
                guard let range = plan.selectPartial(requested, total: total) else { break }
                let claimedEnd = claimedStart + range.count - 1
                let value = "bytes \(claimedStart)-\(claimedEnd)/\(total)"
                plan.headers.replaceOrAdd(name: "Content-Range", value: value)
            case .wrongContentRangeTotal(let claimedTotal):
                guard let range = plan.selectPartial(requested, total: total) else { break }
                let value = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(claimedTotal)"
                plan.headers.replaceOrAdd(name: "Content-Range", value: value)
            case .ignoreRange:
                break
            default:
                if resource.acceptRanges, let requested {
                    _ = plan.selectPartial(requested, total: total)
                }
            }

            if case .contentLengthOverride(let claimed) = behavior {
                plan.headers.add(name: "Content-Length", value: String(claimed))
                plan.ending = .complete(close: true)
            } else if resource.chunked && plan.status != .rangeNotSatisfiable {
                plan.headers.add(name: "Transfer-Encoding", value: "chunked")
            } else {
                plan.headers.add(name: "Content-Length", value: String(plan.bodyRange.count))
            }

            switch behavior {
            case .cutAfter(let bytes, let reset):
                plan.bodyRange = plan.bodyRange.prefix(max(0, bytes))
                plan.ending = .cut(reset: reset)
            case .stallAfter(let bytes):
                plan.bodyRange = plan.bodyRange.prefix(max(0, bytes))
                plan.ending = .stall
            case .throttle(let bytesPerSecond):
                plan.bytesPerSecond = max(1, bytesPerSecond)
            default:
                break
            }
            return plan
        }

        /// The headers that describe the resource itself, whatever part of it is sent.
        private static func representationHeaders(of resource: Resource) -> HTTPHeaders {
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: resource.contentType)
            if resource.acceptRanges {
                headers.add(name: "Accept-Ranges", value: "bytes")
            }
            if let etag = resource.etag {
                headers.add(name: "ETag", value: etag)
            }
            if let lastModified = resource.lastModified {
                headers.add(name: "Last-Modified", value: lastModified)
            }
            if let disposition = resource.contentDisposition {
                headers.add(name: "Content-Disposition", value: disposition)
            }
            if resource.gzip {
                headers.add(name: "Content-Encoding", value: "gzip")
            }
            for (name, value) in resource.extraHeaders {
                headers.add(name: name, value: value)
            }
            return headers
        }

        /// The single range the request asks for, when it asks for one and `If-Range` allows it.
        private static func requestedRange(of request: HTTPRequestHead, resource: Resource, honouringIfRange: Bool) -> ByteRange? {
            guard request.method == .GET || request.method == .HEAD,
                let header = request.headers.first(name: "range"),
                let range = ByteRange(header: header)
            else { return nil }
            if honouringIfRange, let validator = request.headers.first(name: "if-range")?.trimmingBlanks() {
                // RFC 9110 §13.1.5: an entity tag must match strongly, a date exactly.
                let isEntityTag = validator.hasPrefix("\"") || validator.hasPrefix("W/")
                let strongETag = resource.etag.flatMap { $0.hasPrefix("W/") ? nil : $0 }
                guard validator == (isEntityTag ? strongETag : resource.lastModified) else { return nil }
            }
            return range
        }

        /// Whether a conditional `GET` or `HEAD` is answered `304` (RFC 9110 §13.2.2).
        ///
        /// `If-None-Match` decides when present; otherwise `If-Modified-Since` matches when it equals
        /// ``Resource/lastModified`` byte for byte (after trimming blanks), which is what a client that
        /// echoes the `Last-Modified` it was given sends. Dates are not compared as instants: a test that
        /// needs "earlier than" semantics must send the exact value.
        private static func isNotModified(_ request: HTTPRequestHead, resource: Resource) -> Bool {
            if let condition = request.headers.first(name: "if-none-match") {
                return Self.matchesWeakly(condition, etag: resource.etag)
            }
            guard request.method == .GET || request.method == .HEAD,
                let since = request.headers.first(name: "if-modified-since"),
                let lastModified = resource.lastModified
            else { return false }
            return since.trimmingBlanks() == lastModified.trimmingBlanks()
        }

        /// Whether an `If-None-Match` list names `etag` (weak comparison, RFC 9110 §8.8.3.2).
        private static func matchesWeakly(_ condition: String, etag: String?) -> Bool {
            guard let etag else { return false }
            func opaque(_ tag: Substring) -> Substring { tag.hasPrefix("W/") ? tag.dropFirst(2) : tag }
            return condition.split(separator: ",").contains { candidate in
                let candidate = Substring(candidate.trimmingBlanks())
                return candidate == "*" || opaque(candidate) == opaque(Substring(etag))
            }
        }

        /// Narrows the plan to `requested` (the whole body when `nil`) as a `206`, or turns it into a
        /// `416` when the range cannot be satisfied.
        ///
        /// - Returns: The selected range, or `nil` for a `416`.
        private mutating func selectPartial(_ requested: ByteRange?, total: Int) -> Range<Int>? {
            let selected: Range<Int>? = if let requested { requested.resolved(total: total) } else { 0..<total }
            guard let range = selected else {
                self.status = .rangeNotSatisfiable
                self.headers.replaceOrAdd(name: "Content-Range", value: "bytes */\(total)")
                self.bodyRange = 0..<0
                return nil
            }
            self.status = .partialContent
            self.bodyRange = range
            let contentRange = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)"
            self.headers.replaceOrAdd(name: "Content-Range", value: contentRange)
            return range
        }

        /// Applies what depends on the request rather than the resource: no body for `HEAD` and
        /// bodiless statuses, and closing when the client will not keep the connection alive.
        private mutating func adapt(to request: HTTPRequestHead) {
            if request.method == .HEAD || !self.status.mayHaveResponseBody {
                self.bodyRange = self.bodyRange.lowerBound..<self.bodyRange.lowerBound
            }
            let isHTTP11 = request.version.major > 1 || (request.version.major == 1 && request.version.minor >= 1)
            if !isHTTP11 && self.headers.contains(name: "transfer-encoding") {
                // HTTP/1.0 has no chunked coding: delimit the body by closing instead.
                self.headers.remove(name: "transfer-encoding")
                self.ending = .complete(close: true)
            }
            if !request.isKeepAlive, case .complete = self.ending {
                self.ending = .complete(close: true)
            }
            if self.ending == .complete(close: true) {
                self.headers.replaceOrAdd(name: "Connection", value: "close")
            }
        }
    }

    /// One byte range from a `Range` header (RFC 9110 §14.1.2); other forms are not parsed.
    enum ByteRange: Equatable {
        /// `bytes=N-`
        case from(Int)
        /// `bytes=N-M`, with `M >= N`
        case closed(Int, Int)
        /// `bytes=-N`, the last N bytes
        case suffix(Int)

        /// Parses a `Range` value, or returns `nil` for anything but one well-formed byte range.
        init?(header: String) {
            let value = header.trimmingBlanks()
            guard value.lowercased().hasPrefix("bytes=") else { return nil }
            let spec = value.dropFirst("bytes=".count)
            guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
            let first = spec[..<dash].trimmingBlanks()
            let last = spec[spec.index(after: dash)...].trimmingBlanks()
            switch (Self.number(first), Self.number(last)) {
            case (nil, let suffix?) where first.isEmpty:
                self = .suffix(suffix)
            case (let start?, nil) where last.isEmpty:
                self = .from(start)
            case (let start?, let end?) where end >= start:
                self = .closed(start, end)
            default:
                return nil
            }
        }

        /// The bytes this range selects from a body of `total` bytes, or `nil` when none.
        func resolved(total: Int) -> Range<Int>? {
            switch self {
            case .from(let start):
                return start < total ? start..<total : nil
            case .closed(let start, let end):
                return start < total ? start..<(min(end, total - 1) + 1) : nil
            case .suffix(let length):
                return length > 0 && total > 0 ? max(0, total - length)..<total : nil
            }
        }

        private static func number(_ digits: String) -> Int? {
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int(digits)
        }
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs (HTTP's optional whitespace).
    func trimmingBlanks() -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = self.firstIndex(where: { !isBlank($0) }),
            let last = self.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return String(self[first...last])
    }
}
