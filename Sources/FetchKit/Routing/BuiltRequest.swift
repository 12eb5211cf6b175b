import Foundation

/// A request a `Router` built: method, URL, headers and the body's source (kept as a source, so a
/// file or multipart body is streamed when sent rather than held in memory).
public struct BuiltRequest: Sendable {
    public var method: HTTPMethod
    public var url: URL
    public var headers: HTTPHeaders
    public var body: RequestBody

    public init(method: HTTPMethod = .get, url: URL, headers: HTTPHeaders = HTTPHeaders(), body: RequestBody = .none) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

extension BuiltRequest: RequestConvertible {
    public func makeRequest() throws -> BuiltRequest { self }
}

/// Where a request body comes from.
public enum RequestBody: Sendable {
    case none
    case data(Data)
    /// Read from disk when sent.
    case file(path: String)
    case multipart(MultipartFormData)
}
