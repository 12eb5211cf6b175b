import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A type that can build a `URLRequest`, after Alamofire's protocol of the same name. Building needs
/// no network; a thrown error means the inputs cannot make a valid request.
public protocol URLRequestConvertible: Sendable {
    func asURLRequest() throws -> URLRequest
}

extension URLRequest: URLRequestConvertible {
    public func asURLRequest() throws -> URLRequest { self }
}

/// Why a request could not be built from a route and its params.
public struct RequestBuildError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
