import Yams

/// Keys that build a request (a route's, or an ad-hoc job's besides `url` and `method`).
enum RequestKeys {
    static let all = ["parameters", "encoding", "encoding_options", "query", "body"]
}

extension ConfigReader {
    /// Reads `parameters`, `encoding`, `encoding_options`, `query` and `body`, and checks them against
    /// the method (GET and HEAD carry no body).
    func requestSpec(_ e: Entries, method: HTTPMethod) -> RequestSpec {
        var spec = RequestSpec()
        if let n = e["encoding"], let kind = choice(n, ParameterEncodingKind.self, what: "encoding") {
            spec.encoding = kind
            if method.forbidsBody, [.json, .form, .multipart].contains(kind) {
                error("body-not-allowed", "\(method) requests carry no body, so encoding '\(kind.rawValue)' cannot be used", at: n,
                      hint: "use encoding: query, or another method")
            }
        }
        if let n = e["encoding_options"] { spec.encodingOptions = encodingOptions(n) }
        if let n = e["parameters"] {
            if spec.encoding == .multipart {
                if let items = sequence(n, what: "multipart parts") { spec.parameters = .multipart(items.compactMap(multipartPart)) }
            } else if case .mapping = n {
                spec.parameters = .object(value(n))
            } else {
                typeMismatch(n, expected: "a mapping of parameters")
            }
        }
        if let n = e["query"] {
            if case .mapping = n { spec.query = value(n) } else { typeMismatch(n, expected: "a mapping of query parameters") }
        }
        if let n = e["body"] {
            spec.body = rawBody(n)
            if spec.body != nil {
                if method.forbidsBody {
                    error("body-not-allowed", "\(method) requests carry no body", at: e.keyNode("body") ?? n,
                          hint: "remove body, or use another method such as POST")
                } else if e["parameters"] != nil, spec.encoding != .query, !(spec.encoding == .url && method == .delete) {
                    error("conflicting-keys", "body and parameters both make the request body", at: e.keyNode("body") ?? n,
                          hint: "move parameters to query:, or set encoding: query")
                }
            }
        }
        return spec
    }

    func encodingOptions(_ node: Node) -> EncodingOptions {
        var o = EncodingOptions()
        guard let e = mapping(node, allowed: ["arrays", "bools", "spaces", "nested", "sort_keys"], what: "encoding_options") else {
            return o
        }
        if let n = e["arrays"] { o.arrays = choice(n, URLEncodedFormEncoder.ArrayEncoding.self, what: "arrays encoding") }
        if let n = e["bools"] { o.bools = choice(n, URLEncodedFormEncoder.BoolEncoding.self, what: "bools encoding") }
        if let n = e["spaces"] { o.spaces = choice(n, URLEncodedFormEncoder.SpaceEncoding.self, what: "spaces encoding") }
        if let n = e["nested"] { o.nested = choice(n, URLEncodedFormEncoder.KeyPathEncoding.self, what: "nested encoding") }
        if let n = e["sort_keys"] { o.sortKeys = bool(n) }
        return o
    }

    func multipartPart(_ node: Node) -> MultipartPartSpec? {
        guard let e = mapping(node, allowed: ["name", "value", "file", "filename", "content_type"], what: "multipart part"),
              let nameNode = requireKey("name", in: e, of: node, what: "multipart part"),
              let name = string(nameNode) else { return nil }
        var part = MultipartPartSpec(name: name)
        switch (e["value"], e["file"]) {
        case (nil, nil):
            error("missing-key", "multipart part '\(name)' needs 'value' or 'file'", at: node)
            return nil
        case (.some, .some):
            error("conflicting-keys", "multipart part '\(name)' takes 'value' or 'file', not both", at: node)
            return nil
        case (let v?, nil):
            if e["filename"] != nil || e["content_type"] != nil {
                // A text part may still name a content type; filename only makes sense for files.
                if let f = e.keyNode("filename") { error("conflicting-keys", "'filename' goes with 'file', not 'value'", at: f) }
            }
            part.value = value(v).text
        case (nil, let f?):
            part.file = string(f).map(resolvePath)
            part.filename = e["filename"].flatMap { string($0) }
        }
        part.contentType = e["content_type"].flatMap { string($0) }
        return part
    }

    func rawBody(_ node: Node) -> RawBody? {
        guard let e = mapping(node, allowed: ["text", "file", "base64", "content_type"], what: "body") else { return nil }
        let sources = e.items.filter { $0.key != "content_type" }
        guard sources.count == 1, let (kind, _, value) = sources.first else {
            if sources.isEmpty {
                error("missing-key", "body needs exactly one of text, file, base64", at: node)
            } else {
                error("conflicting-keys", "body takes exactly one of text, file, base64; found \(sources.map(\.key).joined(separator: " and "))",
                      at: sources[1].keyNode)
            }
            return nil
        }
        let contentType = e["content_type"].flatMap { string($0) }
        guard let text = string(value) else { return nil }
        switch kind {
        case "text": return RawBody(source: .text(text), contentType: contentType)
        case "file": return RawBody(source: .file(resolvePath(text)), contentType: contentType)
        default:
            let compact = text.filter { !$0.isWhitespace }
            guard Data(base64Encoded: compact) != nil else {
                error("invalid-value", "body.base64 is not valid base64", at: value)
                return nil
            }
            return RawBody(source: .base64(compact), contentType: contentType)
        }
    }
}

import Foundation
