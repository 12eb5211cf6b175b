import Foundation
import Testing
@testable import FetchKit

/// cURL and HTTP renderings, with secrets hidden unless asked for.
@Suite struct RequestRendererTests {
    static let routes = """
        version: 1
        service: svc
        base_url: https://deploy:hunter2@api.example.org
        routes:
          report:
            method: POST
            path: /reports/{{id}}
            encoding: json
            query: {key: "${SVC_API_KEY}"}
            parameters: {title: "it's {{id}}", n: 1}
            headers: {Cookie: session=abc, X-Request: plain}
            auth: {bearer: "${SVC_TOKEN}"}
          upload:
            method: POST
            path: /upload
            encoding: multipart
            parameters:
              - {name: note, value: hello}
              - {name: data, file: data.bin}
        """

    func request(_ route: String, _ params: [String: ParameterValue]) throws -> (LoadedConfig, BuiltRequest) {
        let fixture = try ConfigFixture(["svc.yaml": Self.routes, "data.bin": "0123456789"])
        let config = fixture.load("svc.yaml", environment: ["SVC_API_KEY": "k/ey 42", "SVC_TOKEN": "tok-xyz"])
        #expect(!config.hasErrors, "\(config.diagnostics)")
        let compiled = try #require(config.route(named: route))
        return (config, try Router(route: compiled, params: try compiled.bind(params).get(), multipartBoundary: "B").makeRequest())
    }

    @Test func curlHidesEverySecret() throws {
        let (config, request) = try request("report", ["id": "7"])
        let text = try RequestRenderer(redactor: config.redactor).render(request, format: .curl)
        #expect(text == """
            curl -X POST 'https://<redacted>@api.example.org/reports/7?key=<redacted>' \\
              -H 'User-Agent: fetchctl/\(FetchKitVersion.current)' \\
              -H 'Cookie: <redacted>' \\
              -H 'X-Request: plain' \\
              -H 'Authorization: <redacted>' \\
              -H 'Content-Type: application/json' \\
              --data-binary '{"n":1,"title":"it'\\''s 7"}'

            """)
        for secret in ["hunter2", "k%2Fey", "tok-xyz", "session=abc"] { #expect(!text.contains(secret)) }
    }

    @Test func showSecretsPrintsThemAsSent() throws {
        let (_, request) = try request("report", ["id": "7"])
        let text = try RequestRenderer(redactor: .none).render(request, format: .curl)
        #expect(text.contains("'https://deploy:hunter2@api.example.org/reports/7?key=k/ey%2042'"))
        #expect(text.contains("-H 'Authorization: Bearer tok-xyz'"))
        #expect(text.contains("-H 'Cookie: session=abc'"))
    }

    @Test func httpRendering() throws {
        let (config, request) = try request("report", ["id": "7"])
        let text = try RequestRenderer(redactor: config.redactor).render(request, format: .http)
        #expect(text == """
            POST /reports/7?key=<redacted> HTTP/1.1
            Host: api.example.org
            User-Agent: fetchctl/\(FetchKitVersion.current)
            Cookie: <redacted>
            X-Request: plain
            Authorization: <redacted>
            Content-Type: application/json
            Content-Length: 24

            {"n":1,"title":"it's 7"}
            """ + "\n")
    }

    @Test func multipartRendersAsCurlFormFieldsAndSummarisedFiles() throws {
        let (config, request) = try request("upload", [:])
        let renderer = RequestRenderer(redactor: config.redactor)
        let curl = try renderer.render(request, format: .curl)
        #expect(curl.hasSuffix("""
              -H 'User-Agent: fetchctl/\(FetchKitVersion.current)' \\
              -F 'note=hello' \\
              -F 'data=@\((request.body.filePath ?? ""));filename=data.bin;type=application/octet-stream'

            """))
        let http = try renderer.render(request, format: .http)
        #expect(http.hasSuffix("""
            Content-Type: multipart/form-data; boundary=B
            Content-Length: 191

            --B
            Content-Disposition: form-data; name="note"

            hello
            --B
            Content-Disposition: form-data; name="data"; filename="data.bin"
            Content-Type: application/octet-stream

            <contents of \(request.body.filePath ?? ""), 10 bytes>
            --B--
            """ + "\n"))
    }

    @Test func redactorHidesURLUserinfoAnywhereInText() {
        #expect(Redactor.redactURLUserinfo("see https://u:p@h.org/x and http://h2/y") == "see https://<redacted>@h.org/x and http://h2/y")
        #expect(Redactor(secrets: ["abc", "abcdef"]).redact("x abcdef abc") == "x <redacted> <redacted>")
    }
}

extension RequestBody {
    /// The path of the first file part of a multipart body (for building expected text).
    var filePath: String? {
        guard case .multipart(let form) = self else { return nil }
        for case .file(_, let path, _, _) in form.parts { return path }
        return nil
    }
}
