import Foundation
import Testing
@testable import FetchKit
import FetchKitURLRequest

/// Requests built from YAML routes, asserted byte for byte (no network involved).
@Suite struct RouterTests {
    static let routes = """
        version: 1
        service: api
        base_url: https://api.example.org/v1/
        defaults:
          headers: {Accept: application/json, X-Team: core}
        routes:
          search:
            path: /search?fixed=yes
            params:
              q: {required: true}
              page: {type: integer, default: 1}
              tags: {type: array}
            query: {z: last, a: first}
            parameters: {q: "{{q}}", page: "{{page}}", tags: "{{tags}}", note: "page {{page}} of {{q}}"}
          item:
            method: DELETE
            path: /items/{{id}}
            parameters: {hard: true}
          create:
            method: POST
            path: /items
            parameters: {name: "{{name}}", flags: {public: true}, ids: [1, 2]}
            params: {name: {}}
          create_json:
            method: PUT
            path: /items/{{id}}
            encoding: json
            query: {dry_run: false}
            params: {id: {type: integer}, count: {type: integer}, labels: {type: array}, nothing: {}}
            parameters: {count: "{{count}}", labels: "{{labels}}", title: "item {{id}}", missing: "{{nothing}}"}
            headers: {Content-Type: application/vnd.api+json, X-Team: null}
          upload:
            method: POST
            path: /upload
            encoding: multipart
            parameters:
              - {name: title, value: "report {{n}}"}
              - {name: file, file: payload.txt, content_type: text/plain}
            params: {n: {type: integer}}
          raw:
            method: POST
            path: /raw
            body: {text: "hello {{who}}"}
            params: {who: {}}
          blob:
            method: POST
            path: /blob
            body: {base64: "AAEC/w=="}
          from_file:
            method: PUT
            path: /file
            body: {file: payload.txt, content_type: text/csv}
          bearer:
            path: /me
            auth: {bearer: "${API_TOKEN}"}
          basic:
            path: /me
            auth: {basic: {username: ada, password: "${API_PASSWORD:-s3cret}"}}
          keyed:
            path: /me
            auth: {header: {name: X-Api-Key, value: k-123}}
        """

    func load() throws -> (ConfigFixture, LoadedConfig) {
        let fixture = try ConfigFixture(["api.yaml": Self.routes, "payload.txt": "a,b\n1,2\n"])
        let config = fixture.load("api.yaml", environment: ["API_TOKEN": "tok-abc"])
        #expect(config.diagnostics.isEmpty, "\(config.diagnostics)")
        return (fixture, config)
    }

    func build(_ config: LoadedConfig, _ route: String, _ params: [String: ParameterValue] = [:]) throws -> BuiltRequest {
        let compiled = try #require(config.route(named: route))
        let bound = try compiled.bind(params).get()
        return try Router(route: compiled, params: bound, multipartBoundary: "test.boundary").makeRequest()
    }

    func text(_ body: RequestBody) -> String? {
        if case .data(let data) = body { return String(decoding: data, as: UTF8.self) }
        return nil
    }

    @Test func queryKeepsTheURLsOwnQueryThenQueryThenParameters() throws {
        let (_, config) = try load()
        let request = try build(config, "api.search", ["q": "swift lang", "tags": .array(["a", "b&c"])])
        #expect(request.method == .get)
        #expect(request.url.absoluteString ==
            "https://api.example.org/v1/search?fixed=yes&a=first&z=last&note=page%201%20of%20swift%20lang&page=1&q=swift%20lang&tags%5B%5D=a&tags%5B%5D=b%26c")
        guard case .none = request.body else { Issue.record("GET has no body"); return }
    }

    @Test func urlsBuiltAsStringsStayAsStrictAsURLComponents() throws {
        func url(_ template: String, _ params: [String: ParameterValue] = [:], query: ParameterValue? = nil) throws -> String {
            var request = RequestSpec()
            request.query = query
            let route = CompiledRoute(adHocName: "t", url: template, method: .get, request: request)
            return try Router(route: route, params: params).makeRequest().url.absoluteString
        }
        #expect(try url("http://127.0.0.1:8080/files/{{n}}.bin", ["n": "7"]) == "http://127.0.0.1:8080/files/7.bin")
        #expect(try url("http://127.0.0.1/a?x={{v}}", ["v": "1 2"], query: .object([ParameterEntry(key: "y", value: "3")]))
            == "http://127.0.0.1/a?x=1%202&y=3")
        // A fragment stays last, after the query.
        #expect(try url("http://127.0.0.1/a#top", query: .object([ParameterEntry(key: "y", value: "3")])) == "http://127.0.0.1/a?y=3#top")
        // Characters a URL can't hold are an error, not silently encoded; so is a URL without a host.
        #expect(throws: RequestBuildError.self) { try url("http://127.0.0.1/a b") }
        #expect(throws: RequestBuildError.self) { try url("relative/path") }
        // A host made from a value is still checked on every URL: one that comes out empty is refused.
        #expect(try url("http://127.0.0.{{h}}:8080/x", ["h": "2"]) == "http://127.0.0.2:8080/x")
        #expect(throws: RequestBuildError.self) { try url("http://{{h}}/x", ["h": ""]) }
        // Values after a literal host are percent-encoded, so none can change the host.
        let tricky = try url("http://127.0.0.1/{{p}}", ["p": "@evil.example/x?y#z"])
        #expect(URL(string: tricky)?.host == "127.0.0.1", "\(tricky)")
        #expect(tricky.hasSuffix("%2Fx%3Fy%23z"), "\(tricky)")
    }

    /// Which templates' URLs are known to have their host without asking each one (`hasLiteralHost`).
    @Test func aLiteralHostIsKnownFromTheTemplate() {
        #expect(URLTemplateParts("http://127.0.0.1:8080/files/{{n}}.bin").hasLiteralHost)
        #expect(URLTemplateParts("https://api.example.org?q={{q}}").hasLiteralHost)
        #expect(URLTemplateParts("https://user@api.example.org/x").hasLiteralHost)
        #expect(!URLTemplateParts("http://127.0.0.{{h}}:8080/x").hasLiteralHost)
        #expect(!URLTemplateParts("http://:8080/x").hasLiteralHost)
        #expect(!URLTemplateParts("http:///x").hasLiteralHost)
        #expect(!URLTemplateParts("relative/{{p}}").hasLiteralHost)
        #expect(!URLTemplateParts("{{base}}/x").hasLiteralHost)
    }

    /// A URL whose host comes from a value is checked for one by its bytes: the same answer as
    /// Foundation's `URL.host`, for URLs with a host and without.
    @Test func aURLNamesItsHostAsFoundationSays() {
        let named = ["http://127.0.0.2:8080/x", "http://h", "http://h?x=1", "https://u:p@h.example/x", "http://[::1]:80/",
                     "HTTP+X://h/", "http://h:/x"]
        let unnamed = ["http:///x", "http://:80/x", "http://u@/x", "relative/path", "mailto:a@b.example", "a/b://c", "1http://h/",
                       "http:/h/x", "http:", "http://", "http://[]/"]
        for url in named {
            #expect(URLTemplateParts.namesHost(url), "\(url)")
            #expect(URL(string: url)?.host?.isEmpty == false, "\(url)")
        }
        for url in unnamed {
            #expect(!URLTemplateParts.namesHost(url), "\(url)")
            #expect(URL(string: url).map { $0.host == nil || $0.host == "" || $0.host == "[]" } ?? true, "\(url)")
        }
    }

    @Test func headerNamesCompareWithoutCase() {
        var headers = HTTPHeaders([("Content-Type", "text/plain"), ("X-Id", "1")])
        headers.update(name: "content-TYPE", value: "application/json")
        #expect(headers.map(\.name) == ["Content-Type", "X-Id"])
        #expect(headers["CONTENT-type"] == "application/json")
        #expect(headers["Content-Typf"] == nil)
        #expect(headers["X-Id-"] == nil)
        headers.remove(name: "x-id")
        #expect(headers.count == 1)
    }

    @Test func headersLayerByNameWithDefaultUserAgent() throws {
        let (_, config) = try load()
        let request = try build(config, "api.search", ["q": "x"])
        #expect(request.headers.map { "\($0.name): \($0.value)" } == [
            "User-Agent: fetchctl/\(FetchKitVersion.current)", "Accept: application/json", "X-Team: core",
        ])
    }

    @Test func deleteSendsParametersInTheQueryAndEncodesPathSegments() throws {
        let (_, config) = try load()
        let request = try build(config, "api.item", ["id": "a b/c?"])
        #expect(request.url.absoluteString == "https://api.example.org/v1/items/a%20b%2Fc%3F?hard=1")
    }

    @Test func postSendsAFormBody() throws {
        let (_, config) = try load()
        let request = try build(config, "api.create", ["name": "Zoë & co"])
        #expect(request.url.absoluteString == "https://api.example.org/v1/items")
        #expect(request.headers["content-type"] == "application/x-www-form-urlencoded; charset=utf-8")
        #expect(text(request.body) == "flags%5Bpublic%5D=1&ids%5B%5D=1&ids%5B%5D=2&name=Zo%C3%AB%20%26%20co")
    }

    @Test func jsonBodyKeepsParamTypesAndTheRoutesContentType() throws {
        let (_, config) = try load()
        let request = try build(config, "api.create_json", ["id": "7", "count": 3, "labels": .array(["x", 2])])
        #expect(request.url.absoluteString == "https://api.example.org/v1/items/7?dry_run=0")
        #expect(request.headers["Content-Type"] == "application/vnd.api+json")
        #expect(request.headers["X-Team"] == nil)
        #expect(text(request.body) == #"{"count":3,"labels":["x",2],"title":"item 7"}"#)
    }

    @Test func multipartBodyStreamsFilePartsFromDisk() throws {
        let (fixture, config) = try load()
        let request = try build(config, "api.upload", ["n": 2])
        #expect(request.headers["Content-Type"] == "multipart/form-data; boundary=test.boundary")
        guard case .multipart(let form) = request.body else { Issue.record("expected a multipart body"); return }
        let expected = "--test.boundary\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nreport 2\r\n"
            + "--test.boundary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"payload.txt\"\r\nContent-Type: text/plain\r\n\r\n"
            + "a,b\n1,2\n\r\n--test.boundary--\r\n"
        #expect(String(decoding: try form.encode(), as: UTF8.self) == expected)
        #expect(try form.contentLength() == Int64(expected.utf8.count))
        #expect(form.parts.last == .file(name: "file", path: fixture.path("payload.txt"), filename: "payload.txt", contentType: "text/plain"))
    }

    @Test func rawBodies() throws {
        let (fixture, config) = try load()
        let raw = try build(config, "api.raw", ["who": "world"])
        #expect(text(raw.body) == "hello world")
        #expect(raw.headers["Content-Type"] == "text/plain; charset=utf-8")
        let blob = try build(config, "api.blob")
        guard case .data(let bytes) = blob.body else { Issue.record("expected data"); return }
        #expect(Array(bytes) == [0, 1, 2, 255])
        #expect(blob.headers["Content-Type"] == "application/octet-stream")
        let file = try build(config, "api.from_file")
        guard case .file(let path) = file.body else { Issue.record("expected a file body"); return }
        #expect(path == fixture.path("payload.txt"))
        #expect(file.headers["Content-Type"] == "text/csv")
    }

    @Test func authHeaders() throws {
        let (_, config) = try load()
        #expect(try build(config, "api.bearer").headers["Authorization"] == "Bearer tok-abc")
        #expect(try build(config, "api.basic").headers["Authorization"] == "Basic " + Data("ada:s3cret".utf8).base64EncodedString())
        #expect(try build(config, "api.keyed").headers["X-Api-Key"] == "k-123")
    }

    @Test func asURLRequestCarriesTheSameRequest() throws {
        let (_, config) = try load()
        let compiled = try #require(config.route(named: "create"))
        let request = try Router(route: compiled, params: ["name": "n"]).asURLRequest()
        #expect(request.httpMethod == "POST")
        #expect(request.url?.absoluteString == "https://api.example.org/v1/items")
        #expect(request.value(forHTTPHeaderField: "accept") == "application/json")
        #expect(request.httpBody.map { String(decoding: $0, as: UTF8.self) } == "flags%5Bpublic%5D=1&ids%5B%5D=1&ids%5B%5D=2&name=n")
    }

    @Test func bindingReportsEveryProblem() throws {
        let (_, config) = try load()
        let route = try #require(config.route(named: "api.create_json"))
        let result = route.bind(["id": "seven", "colour": "red", "labels": "not json"])
        guard case .failure(let errors) = result else { Issue.record("expected failures"); return }
        #expect(errors.messages == [
            "unknown param 'colour' for route 'api.create_json'",
            "param 'id' must be an integer, found 'seven'",
            "param 'labels' must be an array, found 'not json'",
        ])
        #expect(try route.bind(["id": "1", "labels": "[1, \"a\"]"]).get()["labels"] == .array([1, "a"]))
    }
}
