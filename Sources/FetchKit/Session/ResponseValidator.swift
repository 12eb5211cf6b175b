import Foundation

/// Checks a response head before its body is kept, after Alamofire's `validate()`: the status must be
/// in `status` (default `2xx`), the `Content-Type` must match the request's `Accept` header (with
/// `*/*` and `type/*` wildcards) or a given list, and the body must not exceed `maxSize`.
public struct ResponseValidator: Sendable, Equatable {
    public var statuses: StatusSet
    public var contentType: ValidationOptions.ContentType?
    public var maxSize: Int64?

    public init(statuses: StatusSet = .success, contentType: ValidationOptions.ContentType? = nil, maxSize: Int64? = nil) {
        self.statuses = statuses
        self.contentType = contentType
        self.maxSize = maxSize
    }

    /// The validator a `validate` block asks for.
    public init(_ options: ValidationOptions) {
        self.init(statuses: options.status ?? .success, contentType: options.contentType, maxSize: options.maxSize)
    }

    /// Nil when the head is acceptable, else the failure (`status` or `validation`).
    public func validate(_ head: TransportResponseHead, for request: BuiltRequest, url: String) -> FetchError? {
        guard statuses.contains(head.status) else {
            return FetchError(.status, "HTTP \(head.status) is not in \(statuses)", url: url, status: head.status)
        }
        if let contentType, let failure = validateContentType(contentType, head: head, request: request, url: url) {
            return failure
        }
        if let maxSize, let length = head.expectedLength, length > maxSize {
            return FetchError(.validation, "the body of \(length) bytes exceeds validate.max_size (\(maxSize) bytes)", url: url, status: head.status)
        }
        return nil
    }

    /// The failure for a body that has grown past `maxSize` while streaming, if it has.
    func checkSize(_ received: Int64, status: Int, url: String) -> FetchError? {
        guard let maxSize, received > maxSize else { return nil }
        return FetchError(.validation, "the body exceeds validate.max_size (\(maxSize) bytes)", url: url, status: status)
    }

    private func validateContentType(_ rule: ValidationOptions.ContentType, head: TransportResponseHead,
                                     request: BuiltRequest, url: String) -> FetchError? {
        let acceptable: [String]
        switch rule {
        case .accept:
            acceptable = (request.headers["Accept"] ?? "*/*").split(separator: ",").map { String($0) }
        case .list(let types):
            acceptable = types
        }
        let patterns = acceptable.compactMap(MIMEType.init)
        guard let header = head.headers["Content-Type"] else {
            // As Alamofire: an empty body needs no type.
            if head.expectedLength == 0 || head.status == 204 || head.status == 304 || request.method == .head { return nil }
            return FetchError(.validation, "the response has no Content-Type; expected \(acceptable.joined(separator: ", "))", url: url, status: head.status)
        }
        guard let actual = MIMEType(header) else {
            return FetchError(.validation, "the Content-Type '\(header)' is not a media type", url: url, status: head.status)
        }
        if patterns.contains(where: { $0.matches(actual) }) { return nil }
        return FetchError(.validation, "the Content-Type '\(actual)' is not one of \(patterns.map(\.description).joined(separator: ", "))",
                          url: url, status: head.status)
    }
}

/// `type/subtype` without parameters, lowercased; `*` is a wildcard in a pattern.
struct MIMEType: Equatable, CustomStringConvertible {
    var type: String
    var subtype: String

    init?(_ text: String) {
        let essence = text.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        let parts = essence.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        type = String(parts[0])
        subtype = String(parts[1])
    }

    /// Whether `self`, as a pattern, accepts `actual`.
    func matches(_ actual: MIMEType) -> Bool {
        if type == "*" && subtype == "*" { return true }
        return type == actual.type && (subtype == "*" || subtype == actual.subtype)
    }

    var description: String { "\(type)/\(subtype)" }
}
