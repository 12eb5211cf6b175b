import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A type that can build a `URLRequest`, after Alamofire's protocol of the same name. Building needs
/// no network; a thrown error means the inputs cannot make a valid request.
///
/// `makeRequest()` is what a `Session` sends. Its default goes through `asURLRequest()`; `Router`
/// implements it directly so file and multipart bodies stay streams.
public protocol URLRequestConvertible: Sendable {
    func asURLRequest() throws -> URLRequest
    func makeRequest() throws -> BuiltRequest
}

extension URLRequestConvertible {
    public func makeRequest() throws -> BuiltRequest {
        try BuiltRequest(try asURLRequest())
    }
}

extension URLRequest: URLRequestConvertible {
    public func asURLRequest() throws -> URLRequest { self }
}

extension String: URLRequestConvertible {
    /// A GET of this URL, as Alamofire's `URLConvertible` strings allow `session.request("https://…")`.
    public func asURLRequest() throws -> URLRequest {
        guard let url = URL(string: self), url.scheme != nil, url.host != nil else { throw RequestBuildError("'\(self)' is not a valid URL") }
        return URLRequest(url: url)
    }
}

extension BuiltRequest {
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

/// Why a request could not be built from a route and its params.
public struct RequestBuildError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
