import Yams

/// Keys every layer of behaviour may set (SPEC §2.1: job > route > defaults > settings > built-in).
enum BehaviourKeys {
    static let all = ["headers", "timeout", "retry", "cache", "validate", "redirect", "auth", "tls"]
}

extension ConfigReader {
    /// Reads the behaviour keys present in `entries` (other keys are the caller's).
    /// `inSettings`: the jobs file's `settings`, where `cache` also takes the store's keys.
    func behaviour(_ entries: Entries, inSettings: Bool = false) -> Behaviour {
        var b = Behaviour()
        if let node = entries["headers"] { b.headers = headers(node) }
        if let node = entries["timeout"] { b.timeout = timeout(node) }
        if let node = entries["retry"] { b.retry = retry(node) }
        if let node = entries["cache"] { b.cache = cache(node, inSettings: inSettings) }
        if let node = entries["validate"] { b.validate = validation(node) }
        if let node = entries["redirect"] { b.redirect = redirect(node) }
        if let node = entries["auth"] { b.auth = auth(node) }
        if let node = entries["tls"] { b.tls = tls(node) }
        return b
    }

    func headers(_ node: Node) -> [HeaderSetting] {
        guard let entries = anyMapping(node, what: "headers") else { return [] }
        var result: [HeaderSetting] = []
        for (name, keyNode, value) in entries.items {
            if !Self.isValidHeaderName(name) {
                error("invalid-value", "invalid header name '\(name)'", at: keyNode,
                      hint: "header names are letters, digits and !#$%&'*+-.^_`|~")
                continue
            }
            if isNull(value) {
                result.append(HeaderSetting(name: name, value: nil))
            } else if case .scalar = value, let text = string(value) {
                if text.contains("\n") || text.contains("\r") {
                    error("invalid-value", "header '\(name)' contains a line break", at: value)
                    continue
                }
                result.append(HeaderSetting(name: name, value: text))
            } else if case .scalar = value {
                continue
            } else {
                typeMismatch(value, expected: "a string (the value of header '\(name)')")
            }
        }
        return result
    }

    static func isValidHeaderName(_ name: String) -> Bool {
        !name.isEmpty && name.unicodeScalars.allSatisfy { s in
            s.isASCII && (s.properties.isAlphabetic || ("0"..."9").contains(s) || "!#$%&'*+-.^_`|~".unicodeScalars.contains(s))
        }
    }

    func timeout(_ node: Node) -> TimeoutOptions {
        var t = TimeoutOptions()
        guard let e = mapping(node, allowed: ["connect", "read", "total"], what: "timeout") else { return t }
        if let n = e["connect"] { t.connect = duration(n) }
        if let n = e["read"] { t.read = duration(n) }
        if let n = e["total"] { t.total = duration(n) }
        return t
    }

    func retry(_ node: Node) -> RetryOptions {
        var r = RetryOptions()
        let keys = ["limit", "backoff", "methods", "statuses", "errors", "retry_after", "budget"]
        guard let e = mapping(node, allowed: keys, what: "retry") else { return r }
        if let n = e["limit"] { r.limit = int(n, minimum: 0, name: "retry.limit") }
        if let n = e["backoff"], let b = mapping(n, allowed: ["base", "scale", "max", "jitter"], what: "retry.backoff") {
            if let n = b["base"] { r.backoffBase = double(n, minimum: 1, name: "backoff.base") }
            if let n = b["scale"] { r.backoffScale = duration(n) }
            if let n = b["max"] { r.backoffMax = duration(n) }
            if let n = b["jitter"] { r.jitter = choice(n, RetryOptions.Jitter.self, what: "jitter") }
        }
        if let n = e["methods"], let items = sequence(n, what: "retry.methods") {
            let methods = items.compactMap { item -> HTTPMethod? in
                guard let m = method(item) else { return nil }
                if !m.isIdempotent {
                    warning("non-idempotent-retry", "retrying \(m) is not safe: it is not idempotent", at: item,
                            hint: "a retried \(m) may apply twice on the server; remove it unless the endpoint is idempotent")
                }
                return m
            }
            if methods.count == items.count { r.methods = methods }
        }
        if let n = e["statuses"] { r.statuses = statusSet(n) }
        if let n = e["errors"], let items = sequence(n, what: "retry.errors") {
            let kinds = items.compactMap { choice($0, RetryOptions.ErrorKind.self, what: "retryable error") }
            if kinds.count == items.count { r.errors = kinds }
        }
        if let n = e["retry_after"], let ra = mapping(n, allowed: ["honor", "max"], what: "retry.retry_after") {
            if let n = ra["honor"] { r.honorRetryAfter = bool(n) }
            if let n = ra["max"] { r.retryAfterMax = duration(n) }
        }
        if let n = e["budget"] { r.budget = duration(n) }
        return r
    }

    static let cacheKeys = ["policy", "behavior", "stale_if_error", "heuristic"]

    /// A `cache` block that can do nothing: on a method whose responses are never stored, or on a
    /// download (downloads keep their own validators and never go through the response cache).
    func warnIfCacheIsIgnored(_ entries: Entries, method: HTTPMethod, downloads: Bool) {
        guard let key = entries.keyNode("cache") else { return }
        if downloads {
            warning("cache-ignored", "downloads never go through the response cache; this 'cache' block has no effect", at: key,
                    hint: "a rerun asks with the download's recorded ETag/Last-Modified and is up_to_date on 304")
        } else if method != .get && method != .head {
            warning("cache-ignored", "only GET and HEAD responses are cached; this \(method.rawValue) request's 'cache' block has no effect",
                    at: key, hint: "a successful \(method.rawValue) invalidates what is stored for its URL")
        }
    }
    /// The store's keys: one cache per run, so only `settings.cache` takes them.
    static let cacheStoreKeys = ["max_size", "dir"]

    func cache(_ node: Node, inSettings: Bool = false) -> CacheOptions {
        var c = CacheOptions()
        guard let e = mapping(node, allowed: Self.cacheKeys + Self.cacheStoreKeys, what: "cache") else { return c }
        if inSettings {
            if let n = e["max_size"] { cacheStore.maxSize = size(n) }
            if let n = e["dir"], let path = string(n) { cacheStore.directory = resolvePath(path) }
        } else {
            for key in Self.cacheStoreKeys {
                if let k = e.keyNode(key) {
                    error("key-not-allowed", "'cache.\(key)' belongs in the jobs file's settings: a run has one response cache", at: k,
                          hint: "move it to settings: {cache: {\(key): …}}")
                }
            }
        }
        if let n = e["heuristic"] { c.heuristic = bool(n) }
        if let n = e["policy"] { c.policy = choice(n, CacheOptions.Policy.self, what: "cache policy") }
        if let n = e["behavior"] {
            if case .scalar = n, let text = string(n) {
                switch text {
                case "cache": c.behavior = .cache
                case "do_not_cache": c.behavior = .doNotCache
                default:
                    error("invalid-value", "invalid cache behavior '\(text)' (expected cache, do_not_cache or {modify: …})",
                          at: n, hint: EditDistance.hint(for: text, among: ["cache", "do_not_cache"]))
                }
            } else if let b = mapping(n, allowed: ["modify"], what: "cache.behavior"), let m = b["modify"],
                      let modify = mapping(m, allowed: ["ttl", "strip_headers"], what: "cache.behavior.modify") {
                let ttl = modify["ttl"].flatMap { duration($0) }
                let strip = modify["strip_headers"].flatMap { stringList($0, what: "strip_headers") } ?? []
                c.behavior = .modify(ttl: ttl, stripHeaders: strip)
            }
        }
        if let n = e["stale_if_error"] {
            c.staleIfError = duration(n)
            if c.policy == .reload {
                warning("cache-ignored", "stale_if_error has no effect with policy reload (it never uses stored responses)", at: n)
            }
        }
        return c
    }

    func validation(_ node: Node) -> ValidationOptions {
        var v = ValidationOptions()
        guard let e = mapping(node, allowed: ["status", "max_size", "content_type"], what: "validate") else { return v }
        if let n = e["status"] { v.status = statusSet(n) }
        if let n = e["max_size"] { v.maxSize = size(n) }
        if let n = e["content_type"] {
            if case .scalar = n, let text = string(n) {
                if text == "accept" {
                    v.contentType = .accept
                } else {
                    v.contentType = .list([text])
                }
            } else if let list = stringList(n, what: "content_type") {
                v.contentType = .list(list)
            }
        }
        return v
    }

    func redirect(_ node: Node) -> RedirectOptions {
        if case .scalar = node {
            guard let text = string(node, what: "follow, no_follow or {max, cross_host}") else { return RedirectOptions() }
            switch text {
            case "follow": return RedirectOptions(follow: true)
            case "no_follow": return RedirectOptions(follow: false)
            default:
                error("invalid-value", "invalid redirect '\(text)' (expected follow, no_follow or {max: N, cross_host: true|false})",
                      at: node, hint: EditDistance.hint(for: text, among: ["follow", "no_follow"]))
                return RedirectOptions()
            }
        }
        var r = RedirectOptions(follow: true)
        guard let e = mapping(node, allowed: ["max", "cross_host"], what: "redirect") else { return RedirectOptions() }
        if let n = e["max"] { r.max = int(n, minimum: 0, name: "redirect.max") }
        if let n = e["cross_host"] { r.crossHost = bool(n) }
        return r
    }

    /// A credential's value as written: its literal text is secret; a `{{…}}` placeholder in it
    /// (an earlier job's capture, a param) is not, and is filled in when the request is made.
    func insertSecret(_ value: String) {
        let template = Template(value)
        guard template.hasPlaceholders else { secrets.insert(value); return }
        for part in template.parts {
            // Short separators ("Bearer ", ":") would garble every line they appear in.
            if case .literal(let text) = part, text.count >= 4 { secrets.insert(text) }
        }
    }

    func auth(_ node: Node) -> AuthOptions? {
        if case .scalar = node {
            if string(node, what: "none or an auth mapping") == "none" { return AuthOptions.none }
            error("invalid-value", "invalid auth \(describe(node)) (expected none, or one of bearer, basic, header, oauth2)", at: node)
            return nil
        }
        let kinds = ["bearer", "basic", "header", "oauth2"]
        guard let e = mapping(node, allowed: kinds, what: "auth") else { return nil }
        guard e.items.count == 1, let (kind, _, value) = e.items.first else {
            if e.items.count > 1 {
                error("conflicting-keys", "auth takes exactly one of bearer, basic, header, oauth2; found \(e.items.map(\.key).joined(separator: " and "))", at: node)
            } else {
                error("missing-key", "auth needs one of bearer, basic, header, oauth2", at: node)
            }
            return nil
        }
        switch kind {
        case "bearer":
            guard let token = string(value, what: "a bearer token") else { return nil }
            insertSecret(token)
            return .bearer(token)
        case "basic":
            guard let b = mapping(value, allowed: ["username", "password"], what: "auth.basic"),
                  let u = requireKey("username", in: b, of: value, what: "auth.basic"),
                  let p = requireKey("password", in: b, of: value, what: "auth.basic"),
                  let username = string(u), let password = string(p) else { return nil }
            insertSecret(password)
            return .basic(username: username, password: password)
        case "header":
            guard let h = mapping(value, allowed: ["name", "value"], what: "auth.header"),
                  let n = requireKey("name", in: h, of: value, what: "auth.header"),
                  let v = requireKey("value", in: h, of: value, what: "auth.header"),
                  let name = string(n), let headerValue = string(v) else { return nil }
            if !Self.isValidHeaderName(name) { error("invalid-value", "invalid header name '\(name)'", at: n) }
            insertSecret(headerValue)
            return .header(name: name, value: headerValue)
        default:
            let keys = ["token_url", "client_id", "client_secret", "scope", "grant", "refresh_token"]
            guard let o = mapping(value, allowed: keys, what: "auth.oauth2") else { return nil }
            let tokenURL = requireKey("token_url", in: o, of: value, what: "auth.oauth2").flatMap { url($0, what: "token_url") }
            let clientID = requireKey("client_id", in: o, of: value, what: "auth.oauth2").flatMap { string($0) }
            var options = OAuth2Options(tokenURL: tokenURL ?? "", clientID: clientID ?? "")
            options.clientSecret = o["client_secret"].flatMap { string($0) }
            options.scope = o["scope"].flatMap { string($0) }
            options.refreshToken = o["refresh_token"].flatMap { string($0) }
            if let n = o["grant"] { options.grant = choice(n, OAuth2Options.Grant.self, what: "grant") ?? .clientCredentials }
            if options.grant == .refreshToken, options.refreshToken == nil, o["refresh_token"] == nil {
                error("missing-key", "auth.oauth2 with grant refresh_token is missing required key 'refresh_token'", at: value)
            }
            for secret in [options.clientSecret, options.refreshToken].compactMap({ $0 }) { secrets.insert(secret) }
            guard tokenURL != nil, clientID != nil else { return nil }
            return .oauth2(options)
        }
    }

    func tls(_ node: Node) -> TLSOptions {
        var t = TLSOptions()
        let keys = ["ca_file", "ca_mode", "pins", "insecure", "client_cert", "client_key", "client_key_passphrase"]
        guard let e = mapping(node, allowed: keys, what: "tls") else { return t }
        if let n = e["ca_file"], let path = string(n) { t.caFile = resolvePath(path) }
        if let n = e["ca_mode"] { t.caMode = choice(n, TLSOptions.CAMode.self, what: "tls.ca_mode") }
        if let n = e["pins"], let items = sequence(n, what: "tls.pins") {
            var pins: [String] = []
            for item in items {
                // An unset ${VAR} was reported already (a warning in validate); its value is no pin to check.
                guard let (pin, complete) = scalarText(item, what: "a pin"), complete else { continue }
                if let normalized = PublicKeyPins.normalized(pin) {
                    pins.append(normalized)
                } else {
                    error("invalid-value", "invalid pin '\(pin)'", at: item,
                          hint: "write sha256/<base64 of the SHA-256 of the certificate's public key (SPKI)>; curl's sha256//<base64> works too")
                }
            }
            if pins.count == items.count { t.pins = pins }
        }
        if let n = e["insecure"] {
            t.insecure = bool(n)
            if t.insecure == true {
                warning("insecure-tls", "tls.insecure turns off certificate checks: anyone on the path can read and change this traffic", at: n)
            }
        }
        if let n = e["client_cert"], let path = string(n) { t.clientCert = resolvePath(path) }
        if let n = e["client_key"], let path = string(n) { t.clientKey = resolvePath(path) }
        if let n = e["client_key_passphrase"], let passphrase = string(n) {
            t.clientKeyPassphrase = passphrase
            secrets.insert(passphrase)
        }
        // A certificate needs its key and a key its certificate, in the same block (layers can't
        // pair one file from a route with another from a job).
        if (e["client_cert"] == nil) != (e["client_key"] == nil) {
            let (present, missing) = e["client_cert"] != nil ? ("client_cert", "client_key") : ("client_key", "client_cert")
            error("missing-key", "tls.\(present) needs tls.\(missing) beside it", at: node,
                  hint: "give both the certificate (PEM) and its private key (PEM)")
        }
        if e["client_key_passphrase"] != nil, e["client_key"] == nil {
            error("missing-key", "tls.client_key_passphrase needs tls.client_key beside it", at: node)
        }
        return t
    }

    /// A path from the config, made absolute against this file's directory.
    func resolvePath(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        return FilePaths.standardized((directory as NSString).appendingPathComponent(path))
    }
}

import Foundation
