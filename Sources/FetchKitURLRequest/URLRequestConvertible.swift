import FetchKit
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A type that can build a Foundation `URLRequest`, after Alamofire's protocol of the same name:
/// the router enums of Alamofire's docs conform by writing `asURLRequest()`, and a `Session` sends
/// them like any `RequestConvertible`.
///
/// It lives apart from FetchKit's core because `URLRequest` is FoundationNetworking's, which links
/// libcurl and some twenty libraries behind it into every binary that uses it, for nothing a
/// `Session` needs (ARCHITECTURE.md, "Link only what runs"). `Router`, `BuiltRequest`, `String` and
/// `URLRequest` itself conform here.
public protocol URLRequestConvertible: RequestConvertible {
    func asURLRequest() throws -> URLRequest
}

extension URLRequestConvertible {
    /// Through `asURLRequest()`; `Router` and `BuiltRequest` keep their own, which stream file and
    /// multipart bodies instead of reading them into memory.
    public func makeRequest() throws -> BuiltRequest {
        try BuiltRequest(try asURLRequest())
    }
}

extension URLRequest: URLRequestConvertible {
    public func asURLRequest() throws -> URLRequest { self }
}

extension String: URLRequestConvertible {
    public func asURLRequest() throws -> URLRequest { try makeRequest().urlRequest() }
}

extension Router: URLRequestConvertible {
    public func asURLRequest() throws -> URLRequest { try makeRequest().urlRequest() }
}

extension BuiltRequest: URLRequestConvertible {
    public func asURLRequest() throws -> URLRequest { try urlRequest() }

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

    /// A Foundation request as FetchKit sends it; a body stream is read into memory.
    public init(_ request: URLRequest) throws {
        guard let url = request.url else { throw RequestBuildError("the request has no URL") }
        let methodName = (request.httpMethod ?? "GET").uppercased()
        guard let method = HTTPMethod(rawValue: methodName) else { throw RequestBuildError("unsupported method '\(methodName)'") }
        var headers = HTTPHeaders()
        for (name, value) in (request.allHTTPHeaderFields ?? [:]).sorted(by: { $0.key < $1.key }) { headers.update(name: name, value: value) }
        var body = RequestBody.none
        if let data = request.httpBody {
            body = .data(data)
        } else if let stream = request.httpBodyStream {
            var data = Data()
            stream.open()
            defer { stream.close() }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = stream.read(&buffer, maxLength: buffer.count)
                if count < 0 { throw RequestBuildError("cannot read the request body stream") }
                if count == 0 { break }
                data.append(buffer, count: count)
            }
            body = .data(data)
        }
        self.init(method: method, url: url, headers: headers, body: body)
    }
}
