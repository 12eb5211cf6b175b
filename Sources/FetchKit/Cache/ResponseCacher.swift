import Foundation

/// Decides what of a cacheable response is stored, after Alamofire's `CachedResponseHandler`: it
/// sees the response the cache would store (already judged storable by RFC 9111) and returns it,
/// a modified copy, or nil to store nothing.
public protocol CachedResponseHandler: Sendable {
    func response(toCache response: CachedResponse, for request: BuiltRequest) -> CachedResponse?
    /// True when the handler stores nothing whatever the response (`ResponseCacher.doNotCache`):
    /// the session then keeps no copy of the body for the cache. The default is false.
    var storesNothing: Bool { get }
    /// True when the handler returns every response it is given as it is (`ResponseCacher.cache`):
    /// the session may then store a response without making the `CachedResponse` it would show
    /// the handler. The default is false.
    var storesUnchanged: Bool { get }
}

extension CachedResponseHandler {
    public var storesNothing: Bool { false }
    public var storesUnchanged: Bool { false }
}

/// Alamofire's `ResponseCacher`: `.cache` stores responses as they are, `.doNotCache` stores
/// nothing, `.modify` changes what is stored. A route's `cache.behavior` becomes one of these.
///
/// ```swift
/// // Keep an API's answers for 10 minutes whatever its headers say, without its cookies' friends.
/// let cacher = ResponseCacher.modify(ttl: 600, stripHeaders: ["X-Request-Id"])
/// var options = RequestOptions()
/// options.cache = RequestCacheOptions(handler: cacher)
/// ```
public struct ResponseCacher: CachedResponseHandler {
    public enum Behavior: Sendable {
        case cache
        case doNotCache
        /// Returns the response to store (or nil to store nothing).
        case modify(@Sendable (BuiltRequest, CachedResponse) -> CachedResponse?)
    }

    public static let cache = ResponseCacher(behavior: .cache)
    public static let doNotCache = ResponseCacher(behavior: .doNotCache)

    /// `behavior: {modify: {ttl, strip_headers}}`: a freshness lifetime that replaces the response's
    /// own (seconds; nil keeps it), and header fields left out of what is stored.
    public static func modify(ttl: TimeInterval?, stripHeaders: [String]) -> ResponseCacher {
        ResponseCacher(behavior: .modify { _, response in
            var stored = response
            if let ttl { stored.ttl = ttl }
            for name in stripHeaders { stored.headers.remove(name: name) }
            return stored
        })
    }

    public let behavior: Behavior

    public init(behavior: Behavior) {
        self.behavior = behavior
    }

    public var storesNothing: Bool {
        if case .doNotCache = behavior { return true }
        return false
    }

    public var storesUnchanged: Bool {
        if case .cache = behavior { return true }
        return false
    }

    public func response(toCache response: CachedResponse, for request: BuiltRequest) -> CachedResponse? {
        switch behavior {
        case .cache: return response
        case .doNotCache: return nil
        case .modify(let change): return change(request, response)
        }
    }
}
