import Foundation

/// Renders a built request as a cURL command or as raw HTTP/1.1, like Alamofire's
/// `cURLDescription()`, except that secrets are `<redacted>` unless the redactor is `.none`.
public struct RequestRenderer: Sendable {
    public enum Format: String, Sendable, CaseIterable {
        case curl, http
    }

    public var redactor: Redactor

    public init(redactor: Redactor) {
        self.redactor = redactor
    }

    public func render(_ request: BuiltRequest, format: Format, tls: TLSOptions = TLSOptions(),
                       httpVersion: AsyncHTTPClientTransport.HTTPVersion = .auto) throws -> String {
        switch format {
        case .curl: return try curl(request, tls: tls, httpVersion: httpVersion)
        case .http: return try http(request)
        }
    }

    /// A command that can be pasted into a POSIX shell, with curl's spelling of the TLS settings in
    /// effect (`--cacert`, `--pinnedpubkey`, `--cert`/`--key`, `-k`, `--http1.1`): file names and
    /// pins, never key material; a key's passphrase is a secret like any other.
    public func curl(_ request: BuiltRequest, tls: TLSOptions = TLSOptions(), httpVersion: AsyncHTTPClientTransport.HTTPVersion = .auto,
                     proxy: Proxy? = nil) throws -> String {
        var lines: [String] = []
        var first = "curl"
        switch request.method {
        case .get: break
        case .head: first += " --head"
        default: first += " -X \(request.method.rawValue)"
        }
        lines.append(first + " " + Self.shellQuote(redactor.redact(request.url.absoluteString)))
        if httpVersion == .http1_1 { lines.append("--http1.1") }
        if let proxy {
            // As curl: https:// is tunnelled, plain http:// forwarded to an HTTP proxy.
            lines.append("--proxy " + Self.shellQuote(proxy.description))
        }
        if let caFile = tls.caFile { lines.append("--cacert " + Self.shellQuote(caFile)) }
        if let pins = tls.pins, !pins.isEmpty {
            lines.append("--pinnedpubkey " + Self.shellQuote(pins.map { "sha256//" + $0.dropFirst("sha256/".count) }.joined(separator: ";")))
        }
        if let certificate = tls.clientCert { lines.append("--cert " + Self.shellQuote(certificate)) }
        if let key = tls.clientKey { lines.append("--key " + Self.shellQuote(key)) }
        if let passphrase = tls.clientKeyPassphrase { lines.append("--pass " + Self.shellQuote(redactor.isEnabled ? Redactor.placeholder : passphrase)) }
        if tls.insecure == true { lines.append("--insecure") }
        var isMultipart = false
        if case .multipart = request.body { isMultipart = true }
        for header in request.headers {
            // curl writes its own multipart Content-Type with its own boundary.
            if isMultipart, header.name.lowercased() == "content-type" { continue }
            lines.append("-H " + Self.shellQuote("\(header.name): \(redactor.headerValue(name: header.name, value: header.value))"))
        }
        switch request.body {
        case .none: break
        case .data(let data):
            if let text = String(data: data, encoding: .utf8) {
                lines.append("--data-binary " + Self.shellQuote(redactor.redact(text)))
            } else {
                lines.append("--data-binary " + Self.shellQuote("<\(data.count) bytes of binary data>"))
            }
        case .file(let path):
            lines.append("--data-binary " + Self.shellQuote("@" + path))
        case .multipart(let form):
            for part in form.parts {
                switch part {
                case .text(let name, let value, let contentType):
                    var field = "\(name)=\(redactor.redact(value))"
                    if let contentType { field += ";type=\(contentType)" }
                    lines.append("-F " + Self.shellQuote(field))
                case .file(let name, let path, let filename, let contentType):
                    lines.append("-F " + Self.shellQuote("\(name)=@\(path);filename=\(filename);type=\(contentType)"))
                }
            }
        }
        return lines.joined(separator: " \\\n  ") + "\n"
    }

    /// The request as it goes on the wire over HTTP/1.1; file contents are summarised, not printed.
    public func http(_ request: BuiltRequest) throws -> String {
        var target = request.url.path.isEmpty ? "/" : URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.percentEncodedQuery { target += "?" + query }
        var out = "\(request.method.rawValue) \(redactor.redact(target)) HTTP/1.1\r\n"
        var host = request.url.host ?? ""
        if let port = request.url.port { host += ":\(port)" }
        out += "Host: \(host)\r\n"
        var body = ""
        var length: Int64?
        switch request.body {
        case .none: break
        case .data(let data):
            length = Int64(data.count)
            body = String(data: data, encoding: .utf8).map(redactor.redact) ?? "<\(data.count) bytes of binary data>"
        case .file(let path):
            length = try? MultipartFormData.fileSize(path)
            body = "<contents of \(path)\(length.map { ", \($0) bytes" } ?? "")>"
        case .multipart(let form):
            length = try? form.contentLength()
            for (index, part) in form.parts.enumerated() {
                body += (index == 0 ? "" : "\r\n") + "--\(form.boundary)\r\n" + form.headerBlock(for: part)
                switch part {
                case .text(_, let value, _): body += redactor.redact(value)
                case .file(_, let path, _, _):
                    let size = (try? MultipartFormData.fileSize(path)).map { ", \($0) bytes" } ?? ""
                    body += "<contents of \(path)\(size)>"
                }
            }
            body += (form.parts.isEmpty ? "" : "\r\n") + "--\(form.boundary)--\r\n"
        }
        for header in request.headers {
            out += "\(header.name): \(redactor.headerValue(name: header.name, value: header.value))\r\n"
        }
        if let length, request.headers["Content-Length"] == nil { out += "Content-Length: \(length)\r\n" }
        out += "\r\n" + body
        let text = out.replacingOccurrences(of: "\r\n", with: "\n")
        return body.isEmpty || text.hasSuffix("\n") ? text : text + "\n"
    }

    /// Single-quotes `s` for a POSIX shell.
    static func shellQuote(_ s: String) -> String {
        "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
