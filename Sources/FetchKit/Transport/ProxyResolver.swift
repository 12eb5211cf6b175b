import Foundation

/// A forward proxy: an HTTP proxy that tunnels with `CONNECT`, or a SOCKS5 proxy.
public struct Proxy: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case http
        case socks5
    }

    public var kind: Kind
    public var host: String
    public var port: Int
    /// From the proxy URL's userinfo (percent-decoded); sent as `Proxy-Authorization: Basic`.
    public var username: String?
    public var password: String?

    public init(kind: Kind, host: String, port: Int, username: String? = nil, password: String? = nil) {
        self.kind = kind
        self.host = host
        self.port = port
        self.username = username
        self.password = password
    }

    /// `http://host:port` or `socks5h://host:port` (names resolved at the proxy), with credentials as `<redacted>`: what logs,
    /// messages and `--dry-run` show.
    public var description: String {
        "\(kind == .http ? "http" : "socks5h")://\(username == nil ? "" : Redactor.placeholder + "@")\(host):\(port)"
    }

    /// Parses a proxy URL as curl does: `host:port` alone is an HTTP proxy (port 1080 by default,
    /// curl's), `http://`, `socks5://` and `socks5h://` are understood (SOCKS5 always resolves
    /// names at the proxy here, so the two are the same). Throws for anything else, naming the URL
    /// without its credentials.
    public init(parsing text: String) throws {
        var text = text.trimmingCharacters(in: .whitespaces)
        if !text.contains("://") { text = "http://" + text }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              let host = components.host, !host.isEmpty else {
            // Not even the text: a password with a bare '#', '/' or '?' is what makes such a URL
            // unreadable, and the redactor could not find it either.
            throw FetchError(.proxy, "a proxy URL is not a URL (percent-encode '#', '/', '?' and '@' in its user name and password)")
        }
        let shown = "\(scheme)://\(components.user == nil ? "" : Redactor.placeholder + "@")\(host)\(components.port.map { ":\($0)" } ?? "")"
        switch scheme {
        case "http": kind = .http
        case "socks5", "socks5h": kind = .socks5
        case "https":
            throw FetchError(.proxy, "the proxy '\(shown)' is an HTTPS proxy, which is not supported; use http:// (the tunnel to an https:// server is encrypted end to end anyway)")
        default:
            throw FetchError(.proxy, "the proxy '\(shown)' has the scheme '\(scheme)'; use http://, socks5:// or socks5h://")
        }
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        port = components.port ?? 1080
        username = components.percentEncodedUser.map { $0.removingPercentEncoding ?? $0 }
        password = components.percentEncodedPassword.map { $0.removingPercentEncoding ?? $0 }
        if kind == .socks5, username != nil {
            throw FetchError(.proxy, "the SOCKS5 proxy \(description) has credentials, which AsyncHTTPClient can't send; use an HTTP proxy, or one without a password")
        }
    }
}

/// Which proxy a request goes through, as curl decides it: `https_proxy`/`HTTPS_PROXY` for https://
/// URLs, `http_proxy` for http:// ones (lowercase only, as curl: an `HTTP_PROXY` set by a CGI
/// server from a request's `Proxy:` header must not be trusted), `all_proxy`/`ALL_PROXY` for
/// either when those are unset, and `no_proxy`/`NO_PROXY` for hosts that go direct. The lowercase
/// variable wins where both are set. `settings.proxy: {url, no_proxy}` overrides the environment.
public struct ProxyResolver: Sendable, Hashable {
    public var httpsProxy: Proxy?
    public var httpProxy: Proxy?
    public var noProxy: NoProxy

    /// No proxy for anything (the library's default).
    public static let direct = ProxyResolver(httpsProxy: nil, httpProxy: nil, noProxy: NoProxy(""))

    public init(httpsProxy: Proxy?, httpProxy: Proxy?, noProxy: NoProxy) {
        self.httpsProxy = httpsProxy
        self.httpProxy = httpProxy
        self.noProxy = noProxy
    }

    /// From the environment, with `settings.proxy`'s `url` and `noProxy` (a comma-separated
    /// list) taking its place when given. Throws for a proxy URL that can't be used.
    public init(environment: [String: String], url: String? = nil, noProxy: String? = nil) throws {
        func variable(_ name: String) -> String? {
            for key in [name.lowercased(), name.uppercased()] {
                if let value = environment[key], !value.isEmpty { return value }
            }
            return nil
        }
        let all = variable("all_proxy")
        if let url {
            let proxy = url.isEmpty ? nil : try Proxy(parsing: url)
            httpsProxy = proxy
            httpProxy = proxy
        } else {
            httpsProxy = try (variable("https_proxy") ?? all).map(Proxy.init(parsing:))
            let http = environment["http_proxy"].flatMap { $0.isEmpty ? nil : $0 } ?? all
            httpProxy = try http.map(Proxy.init(parsing:))
        }
        self.noProxy = NoProxy(noProxy ?? variable("no_proxy") ?? "")
    }

    /// The proxy for `url`, or nil to connect directly.
    public func proxy(for url: URL) -> Proxy? {
        let proxy = url.scheme?.lowercased() == "https" ? httpsProxy : httpProxy
        guard let proxy, let host = url.host, !noProxy.matches(host) else { return nil }
        return proxy
    }
}

/// `no_proxy` as curl reads it: a comma-separated list of host names, domains (with or without a
/// leading dot: `example.com` covers `api.example.com` too), IP addresses and CIDR ranges, or `*`
/// for every host. Ports are not considered.
public struct NoProxy: Sendable, Hashable {
    public let entries: [String]

    public init(_ list: String) {
        entries = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
    }

    public func matches(_ host: String) -> Bool {
        var host = host.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.hasSuffix(".") { host.removeLast() }
        for entry in entries {
            if entry == "*" { return true }
            if entry.contains("/") {
                if Self.address(host, isIn: entry) { return true }
                continue
            }
            var domain = entry.hasPrefix(".") ? String(entry.dropFirst()) : entry
            if domain.hasSuffix(".") { domain.removeLast() }
            if host == domain || host.hasSuffix("." + domain) { return true }
        }
        return false
    }

    /// Whether the IPv4 or IPv6 address `host` lies in the CIDR range `range` (`10.0.0.0/8`).
    static func address(_ host: String, isIn range: String) -> Bool {
        let parts = range.split(separator: "/", maxSplits: 1)
        guard parts.count == 2, let bits = Int(parts[1]), let network = bytes(String(parts[0])), let address = bytes(host),
              network.count == address.count, (0...network.count * 8).contains(bits) else { return false }
        for index in 0..<network.count {
            let remaining = bits - index * 8
            if remaining <= 0 { break }
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if network[index] & mask != address[index] & mask { return false }
        }
        return true
    }

    private static func bytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
