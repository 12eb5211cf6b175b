import Foundation

/// A compiled route bound to its params: builds the request the route describes, with no network.
///
/// Order of the URL's query: the template's own query, then `query:`, then `parameters` when they go
/// to the query string. Headers: `User-Agent: fetchctl/<version>`, then the layered `headers`, then
/// the `auth` header; an encoder sets `Content-Type` only when no layer did.
public struct Router: RequestConvertible {
    /// The route and the behaviour, shared rather than copied: a job's router is made for each of
    /// its requests, and copying both cost about 100 retains and releases a job (callgrind).
    /// Replaced as a whole when either is set.
    ///
    /// Not final: a jobs-file entry (`ExpandedJob.Common`) is one, rather than holding one.
    class Parts: @unchecked Sendable {
        let route: CompiledRoute
        let behaviour: Behaviour

        init(route: CompiledRoute, behaviour: Behaviour) {
            self.route = route
            self.behaviour = behaviour
        }
    }

    private var parts: Parts

    public var route: CompiledRoute {
        _read { yield parts.route }
        set { parts = Parts(route: newValue, behaviour: parts.behaviour) }
    }

    /// Param values by name, already checked (see `CompiledRoute.bind`); matrix values as `matrix.key`.
    public var params: [String: ParameterValue]

    /// Fully layered behaviour (headers and auth are used here).
    public var behaviour: Behaviour {
        _read { yield parts.behaviour }
        set { parts = Parts(route: parts.route, behaviour: newValue) }
    }
    /// The multipart boundary; nil makes a random one for each multipart body built.
    public var multipartBoundary: String?
    /// Parameters set after the request is built, in the query (or at a dotted path of a JSON
    /// body), replacing any of the same name: an `incremental` job's cursor.
    public var overrides: [(param: String, value: ParameterValue)] = []

    public init(route: CompiledRoute, params: [String: ParameterValue], behaviour: Behaviour? = nil,
                multipartBoundary: String? = nil) {
        parts = Parts(route: route, behaviour: behaviour ?? route.behaviour)
        self.params = params
        self.multipartBoundary = multipartBoundary
    }

    /// A router over `parts` someone keeps (a jobs file's entry, for each of its jobs).
    init(parts: Parts, params: [String: ParameterValue]) {
        self.parts = parts
        self.params = params
    }

    public static let defaultUserAgent = "fetchctl/\(FetchKitVersion.current)"

    /// The request as a value fetchctl can render and send, with the body kept as its source.
    public func makeRequest() throws -> BuiltRequest {
        let url = try buildURL()
        // Room for the route's headers and the few the session and the cache add (`Accept-Encoding`,
        // a validator): grown one field at a time, the array was made three times a request.
        var headers = HTTPHeaders()
        headers.reserveCapacity(behaviour.headers.count + 4)
        headers.add(name: "User-Agent", value: Self.defaultUserAgent)
        for setting in behaviour.headers {
            guard let value = setting.value else { headers.remove(name: setting.name); continue }
            let rendered = Template(value)
            if let sole = rendered.solePlaceholder, params[sole] == nil { headers.remove(name: setting.name); continue }
            headers.update(name: setting.name, value: rendered.render { params[$0]?.text ?? "" })
        }
        // Credentials may come from an earlier job's capture: `bearer: "{{jobs.login.token}}"`.
        func fill(_ text: String) -> String {
            Template.mayContainPlaceholder(text) ? Template(text).render { params[$0]?.text ?? "" } : text
        }
        switch behaviour.auth {
        case .bearer(let token)?: headers.update(name: "Authorization", value: "Bearer \(fill(token))")
        case .basic(let user, let password)?:
            headers.update(name: "Authorization", value: "Basic " + Data("\(fill(user)):\(fill(password))".utf8).base64EncodedString())
        case .header(let name, let value)?: headers.update(name: name, value: fill(value))
        case .oauth2?, .none?, nil: break
        }
        let body = try buildBody(headers: &headers)
        var request = BuiltRequest(method: route.method, url: url, headers: headers, body: body)
        for (param, value) in overrides {
            try PageRequest.set(param, to: .string(value.text), in: &request)
        }
        return request
    }

    // MARK: - URL

    private func buildURL() throws -> URL {
        var missing: [String] = []
        let path = route.urlParts.path.render { name in
            guard let value = params[name] else { missing.append(name); return nil }
            return Self.encodePathSegment(value.text)
        }
        if !missing.isEmpty {
            throw RequestBuildError("no value for \(missing.map { "'{{\($0)}}'" }.joined(separator: ", ")) in the URL of \(route.name)")
        }
        var queryItems: [String] = []
        if let ownQuery = route.urlParts.query?.render({ name in URLEncodedFormEncoder().escape(params[name]?.text ?? "") }),
           !ownQuery.isEmpty {
            queryItems.append(ownQuery)
        }
        let encoder = route.request.encodingOptions.formEncoder
        if let query = route.request.query, let substituted = substitute(query) {
            let encoded = try encoder.encode(substituted)
            if !encoded.isEmpty { queryItems.append(encoded) }
        }
        if case .object(let parameters)? = route.request.parameters, parametersGoToQuery,
           let substituted = substitute(parameters) {
            let encoded = try encoder.encode(substituted)
            if !encoded.isEmpty { queryItems.append(encoded) }
        }
        let query = queryItems.isEmpty ? nil : queryItems.joined(separator: "&")
        let url: URL?
        let namesHost: Bool
        if UTF8Text.contains(UInt8(ascii: "#"), in: path) {
            // A fragment: the query goes before it, which URLComponents knows how to do.
            var components = URLComponents(string: path)
            components?.percentEncodedQuery = query
            url = components?.url
            namesHost = url?.host != nil
        } else {
            // The usual case: the string is the URL. Parsed as strictly as URLComponents would
            // (invalid characters make it invalid rather than being encoded), at a third of the cost.
            let string = query.map { path + "?" + $0 } ?? path
            url = URL(string: string, encodingInvalidCharacters: false)
            namesHost = route.urlParts.hasLiteralHost || URLTemplateParts.namesHost(string)
        }
        guard let url, namesHost else {
            throw RequestBuildError("'\(Redactor.redactURLUserinfo(path))' is not a valid URL")
        }
        return url
    }

    /// `url` puts parameters in the query for GET, HEAD and DELETE, in a form body otherwise.
    private var parametersGoToQuery: Bool {
        switch route.request.encoding {
        case .query: return true
        case .url: return [.get, .head, .delete].contains(route.method)
        case .form, .json, .multipart: return false
        }
    }

    /// `value` percent-encoded as one path segment. Values made only of unreserved characters (ids,
    /// numbers, slugs: the usual case) are returned as they are without Foundation's encoder.
    static func encodePathSegment(_ value: String) -> String? {
        let plain = value.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
        }
        return plain ? value : value.addingPercentEncoding(withAllowedCharacters: pathSegmentAllowed)
    }

    /// RFC 3986 path characters less `/`, so a value stays one segment.
    static let pathSegmentAllowed = CharacterSet.urlPathAllowed.subtracting(CharacterSet(charactersIn: "/;"))

    // MARK: - Body

    private func buildBody(headers: inout HTTPHeaders) throws -> RequestBody {
        func setContentType(_ value: String) {
            if headers["Content-Type"] == nil { headers.update(name: "Content-Type", value: value) }
        }
        if let raw = route.request.body {
            switch raw.source {
            case .text(let text):
                setContentType(raw.contentType ?? "text/plain; charset=utf-8")
                return .data(Data(Template(text).render { params[$0]?.text ?? "" }.utf8))
            case .base64(let b64):
                setContentType(raw.contentType ?? "application/octet-stream")
                return .data(Data(base64Encoded: b64) ?? Data())
            case .file(let path):
                setContentType(raw.contentType ?? "application/octet-stream")
                return .file(path: path)
            }
        }
        switch route.request.parameters {
        case nil:
            return .none
        case .multipart(let parts)?:
            let form = MultipartFormData(boundary: multipartBoundary ?? MultipartFormData.randomBoundary(), parts: parts.map { part in
                let name = Template(part.name).render { params[$0]?.text ?? "" }
                if let file = part.file {
                    return .file(name: name, path: file, filename: part.filename ?? (file as NSString).lastPathComponent,
                                 contentType: part.contentType ?? MultipartFormData.mimeType(forPath: file))
                }
                let value = Template(part.value ?? "").render { params[$0]?.text ?? "" }
                return .text(name: name, value: value, contentType: part.contentType)
            })
            setContentType(form.contentType)
            return .multipart(form)
        case .object(let parameters)?:
            if parametersGoToQuery { return .none }
            let substituted = substitute(parameters) ?? .object([])
            if route.request.encoding == .json {
                setContentType("application/json")
                let sorted = route.request.encodingOptions.sortKeys ?? true
                return .data(try JSONParameterEncoder(sortedKeys: sorted).encode(substituted))
            }
            setContentType("application/x-www-form-urlencoded; charset=utf-8")
            return .data(Data(try route.request.encodingOptions.formEncoder.encode(substituted).utf8))
        }
    }

    /// Fills `{{name}}` placeholders: a string that is exactly one placeholder takes the param's value
    /// with its type (nil, and so dropped, when the param has no value); inside text it is the text.
    func substitute(_ value: ParameterValue) -> ParameterValue? {
        switch value {
        case .string(let s):
            let template = Template(s)
            guard template.hasPlaceholders else { return value }
            if let sole = template.solePlaceholder { return params[sole] }
            return .string(template.render { params[$0]?.text ?? "" })
        case .array(let items):
            return .array(items.compactMap(substitute))
        case .object(let entries):
            return .object(entries.compactMap { entry in substitute(entry.value).map { ParameterEntry(key: entry.key, value: $0) } })
        default:
            return value
        }
    }
}
