import Foundation

/// A type that can build the request a `Session` sends: method, URL, headers and the body's source.
/// Building needs no network; a thrown error means the inputs cannot make a valid request.
///
/// Alamofire's `URLRequestConvertible` (types that build a Foundation `URLRequest`) is this protocol
/// with `asURLRequest()`: it lives in `FetchKitURLRequest`, with `URLRequest`, `Router` and
/// `BuiltRequest` conforming to it, so that only programs that use `URLRequest` link
/// FoundationNetworking and libcurl (the `fetchctl` binary does not).
public protocol RequestConvertible: Sendable {
    func makeRequest() throws -> BuiltRequest
}

extension String: RequestConvertible {
    /// A GET of this URL, as Alamofire's `URLConvertible` strings allow `session.request("https://…")`.
    public func makeRequest() throws -> BuiltRequest {
        guard let url = URL(string: self), url.scheme != nil, url.host != nil else { throw RequestBuildError("'\(self)' is not a valid URL") }
        return BuiltRequest(url: url)
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
