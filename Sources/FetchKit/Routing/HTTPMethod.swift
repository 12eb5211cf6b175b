/// An HTTP request method (RFC 9110, plus `QUERY`).
public enum HTTPMethod: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case get = "GET", head = "HEAD", post = "POST", put = "PUT", patch = "PATCH", delete = "DELETE"
    case options = "OPTIONS", trace = "TRACE", query = "QUERY"

    public var description: String { rawValue }

    /// Methods whose retry is safe by default (RFC 9110 §9.2.2).
    public var isIdempotent: Bool { ![.post, .patch].contains(self) }

    /// Methods that may not carry a body in a fetchctl route.
    public var forbidsBody: Bool { self == .get || self == .head }
}
