import Foundation

/// Decides what happens on a 3xx with a `Location`, after Alamofire's `Redirector`: follow it (at
/// most `max` hops, 10 by default), stop and return the 3xx as the response (`no_follow`), or refuse
/// a redirect to another origin (`cross_host: false`).
///
/// Credentials never cross origins: `Authorization`, `Proxy-Authorization`, `Cookie` and any header
/// an `auth: {header: …}` block set are dropped when the next hop's scheme, host or port differs.
/// Like browsers and URLSession, 303 (and 301/302 after a POST) continue as a GET without a body;
/// 307 and 308 repeat the method and body.
public struct Redirector: Sendable, Equatable {
    /// The most hops `follow` allows (SPEC §2.2).
    public static let defaultMaximum = 10

    public var follows: Bool
    public var maximum: Int
    public var crossHost: Bool
    /// Header names (lowercased) removed before a hop to another origin.
    public var credentialHeaders: Set<String>

    public init(follows: Bool = true, maximum: Int = Redirector.defaultMaximum, crossHost: Bool = true,
                credentialHeaders: Set<String> = []) {
        self.follows = follows
        self.maximum = maximum
        self.crossHost = crossHost
        self.credentialHeaders = Set(credentialHeaders.map { $0.lowercased() }).union(Self.alwaysStripped)
    }

    /// The redirector a `redirect` block asks for.
    public init(_ options: RedirectOptions, credentialHeaders: Set<String> = []) {
        self.init(follows: options.follow ?? true, maximum: options.max ?? Self.defaultMaximum,
                  crossHost: options.crossHost ?? true, credentialHeaders: credentialHeaders)
    }

    public static let follow = Redirector()
    public static let doNotFollow = Redirector(follows: false)

    static let alwaysStripped: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    public enum Decision: Sendable {
        /// Not a redirect to follow: the response is the result.
        case returnResponse
        /// Send this request next.
        case follow(BuiltRequest)
        /// Stop with this error.
        case fail(FetchError)
    }

    /// What to do with a response of `status` to `request`, which was reached after `hops` redirects.
    public func decide(_ request: BuiltRequest, status: Int, headers: HTTPHeaders, hops: Int, redactor: Redactor) -> Decision {
        guard follows, [301, 302, 303, 307, 308].contains(status), let location = headers["Location"] else {
            return .returnResponse
        }
        let shownURL = redactor.redact(request.url.absoluteString)
        guard let target = URL(string: location, relativeTo: request.url)?.absoluteURL, target.host != nil,
              ["http", "https"].contains(target.scheme?.lowercased() ?? "") else {
            return .fail(FetchError(.redirect, "the redirect location '\(redactor.redact(location))' is not an http(s) URL", url: shownURL, status: status))
        }
        if hops >= maximum {
            return .fail(FetchError(.redirect, "more than \(maximum) redirects", url: shownURL, status: status))
        }
        var next = request
        next.url = target
        let sameOrigin = Self.origin(of: request.url) == Self.origin(of: target)
        if !sameOrigin {
            guard crossHost else {
                return .fail(FetchError(.redirect, "a redirect to another host (\(target.host ?? "")) is not allowed by redirect.cross_host: false",
                                        url: shownURL, status: status))
            }
            for header in request.headers where credentialHeaders.contains(header.name.lowercased()) {
                next.headers.remove(name: header.name)
            }
        }
        if status == 303 && request.method != .head || (status == 301 || status == 302) && request.method == .post {
            next.method = .get
            next.body = .none
            next.headers.remove(name: "Content-Type")
            next.headers.remove(name: "Content-Length")
        }
        return .follow(next)
    }

    /// Scheme, host and port (with the scheme's default port filled in).
    static func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }
}
