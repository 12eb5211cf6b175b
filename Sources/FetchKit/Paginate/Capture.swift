import Foundation
import NIOCore

/// `capture:` of a job: values taken from its response that later jobs use as
/// `{{jobs.<job>.<name>}}` (docs/crawling.md#captures).
public struct CaptureSpec: Sendable {
    public enum Source: Sendable {
        /// `json: "$.access_token"`: the first match's text.
        case json(JSONPath)
        /// `header: ETag`: the response header's value.
        case header(String)
        /// `regex: "id=(\\d+)"`: the first match in the body's text; its first group when it has one.
        case regex(NSRegularExpression)

        /// As written, for messages.
        public var description: String {
            switch self {
            case .json(let path): "json \(path.text)"
            case .header(let name): "header \(name)"
            case .regex(let expression): "regex \(expression.pattern)"
            }
        }

        var readsBody: Bool {
            if case .header = self { return false }
            return true
        }
    }

    public var name: String
    public var source: Source
    /// `secret: true`: the value is redacted everywhere, as a secret `${VAR}` is.
    public var secret: Bool
    public var location: SourceLocation

    /// The value this capture takes from a response; nil when it finds none.
    func value(head: TransportResponseHead, body: Data?) -> String? {
        switch source {
        case .header(let name):
            return head.headers.value(for: name)
        case .json(let path):
            guard let body, let document = try? JSONValue.parse(body) else { return nil }
            return path.first(in: document)?.text
        case .regex(let expression):
            guard let body else { return nil }
            let text = String(decoding: body, as: UTF8.self)
            guard let match = expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) else { return nil }
            let range = match.numberOfRanges > 1 ? match.range(at: 1) : match.range
            return Range(range, in: text).map { String(text[$0]) }
        }
    }
}

/// What the run's jobs captured, by job id and capture name: set when a job succeeds, read when a
/// job that uses them starts (after it, since using a capture implies `needs`).
final class CaptureStore: Sendable {
    enum Entry: Sendable {
        case value(String)
        /// The capture found nothing in the response: why, for `capture_missing`.
        case missing(String)
    }

    private let box = LockedBox([String: [String: Entry]]())
    /// Where secret captures go, so every later line fetchctl writes hides them.
    let secrets: SecretValues?

    init(secrets: SecretValues?) {
        self.secrets = secrets
    }

    func record(job: String, _ entries: [String: Entry]) {
        box.withLock { $0[job] = entries }
    }

    func entry(job: String, name: String) -> Entry? {
        box.withLock { $0[job]?[name] }
    }
}

/// Secret values learnt during a run (secret captures): shared by every copy of the run's
/// `Redactor`, so a value captured now is hidden in everything written from now on.
public final class SecretValues: Sendable {
    private let box = LockedBox([String]())

    public init() {}

    func add(_ value: String) {
        guard !value.isEmpty else { return }
        box.withLock { values in
            guard !values.contains(value) else { return }
            values.append(value)
            // As the value appears once escaped into a query string or a path, as Redactor's secrets do.
            var forms = [URLEncodedFormEncoder(), URLEncodedFormEncoder(spaceEncoding: .plusReplaced)].map { $0.escape(value) }
            if let path = value.addingPercentEncoding(withAllowedCharacters: Router.pathSegmentAllowed) { forms.append(path) }
            for form in forms where !values.contains(form) { values.append(form) }
            values.sort { $0.count > $1.count }
        }
    }

    var values: [String] { box.withLock { $0 } }
}

/// Passes a response through to the job's own sink and keeps its head (and, for `json` and `regex`
/// captures, its body up to 64 MiB) for the job's captures.
final class CapturingSink<Inner: ResponseSink>: ResponseSink {
    static var bodyLimit: Int { 64 << 20 }

    let inner: Inner
    let keepsBody: Bool
    private let box = LockedBox((head: TransportResponseHead?.none, body: Data(), overflowed: false))

    init(inner: Inner, keepsBody: Bool) {
        self.inner = inner
        self.keepsBody = keepsBody
    }

    var head: TransportResponseHead? { box.withLock { $0.head } }
    /// nil when the body was not kept, or was larger than the limit.
    var body: Data? { box.withLock { keepsBody && !$0.overflowed ? $0.body : nil } }

    func prepare(_ request: BuiltRequest, attempt: Int) async throws -> BuiltRequest { try await inner.prepare(request, attempt: attempt) }
    func handles(status: Int) -> Bool { inner.handles(status: status) }

    func open(_ head: TransportResponseHead) throws {
        box.withLock { state in
            state.head = head
            state.body.removeAll(keepingCapacity: true)
            state.overflowed = false
        }
        try inner.open(head)
    }

    func write(_ chunk: ByteBuffer) throws {
        if keepsBody {
            box.withLock { state in
                guard !state.overflowed else { return }
                guard state.body.count + chunk.readableBytes <= Self.bodyLimit else {
                    state.overflowed = true
                    state.body = Data()
                    return
                }
                chunk.withUnsafeReadableBytes { state.body.append(contentsOf: $0) }
            }
        }
        try inner.write(chunk)
    }

    func finish() async throws { try await inner.finish() }
    func abandon() async { await inner.abandon() }
    var cacheUse: RequestMetrics.CacheUse { inner.cacheUse }
}
