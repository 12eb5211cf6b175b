import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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

    /// A Foundation request; file and multipart bodies become a body stream.
    public func urlRequest() throws -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = method.rawValue
        for header in headers { request.setValue(header.value, forHTTPHeaderField: header.name) }
        switch body {
        case .none: break
        case .data(let data): request.httpBody = data
        case .file(let path):
            guard let stream = InputStream(fileAtPath: path) else { throw RequestBuildError("cannot read body file '\(path)'") }
            request.httpBodyStream = stream
        case .multipart(let form):
            if let length = try? form.contentLength() { request.setValue(String(length), forHTTPHeaderField: "Content-Length") }
            request.httpBodyStream = try form.makeInputStream()
        }
        return request
    }
}

extension BuiltRequest: URLRequestConvertible {
    public func asURLRequest() throws -> URLRequest { try urlRequest() }
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
