import Testing
@testable import FetchKit

/// Each config check, asserted on the exact text `fetchctl validate` prints.
@Suite struct DiagnosticsTests {
    @Test func yamlSyntaxErrorKeepsLibyamlPosition() throws {
        let fixture = try ConfigFixture(["a.yaml": "version: 1\njobs:\n  - id: a\n    url: \"https://example.org\n"])
        #expect(fixture.diagnostics("a.yaml") == """
            a.yaml:5:1: error: found unexpected end of stream (while scanning a quoted scalar at line 4, column 10)

            ^

            """)
    }

    @Test func duplicateKeyInOneMapping() throws {
        let fixture = try ConfigFixture(["a.yaml": "version: 1\nservice: s\nbase_url: https://x.org\nroutes:\n  a: {path: /a}\n  a: {path: /b}\n"])
        #expect(fixture.diagnostics("a.yaml") == """
            a.yaml:5:3: error: duplicate key 'a' in a mapping (each key may appear once; merge the two entries)
              a: {path: /a}
              ^

            """)
    }

    /// A file with Windows line ends quotes the right line, without its "\r".
    @Test func crlfFilesQuoteTheRightLine() throws {
        let fixture = try ConfigFixture(["a.yaml": "version: 1\r\nservice: s\r\nbase_url: https://x.org\r\nroutes:\r\n  a: {path: /a}\r\n  a: {path: /b}\r\n"])
        #expect(fixture.diagnostics("a.yaml") == """
            a.yaml:5:3: error: duplicate key 'a' in a mapping (each key may appear once; merge the two entries)
              a: {path: /a}
              ^

            """)
    }

    /// A placeholder in `save` that is neither a param nor a matrix key is an error, reported once
    /// for the entry (before, the job silently lost its output path and discarded the body).
    @Test func outputPathPlaceholdersMustNameSomething() throws {
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            jobs:
              - id: a
                url: https://example.org/a
                save: "out/{{nope}}.bin"
              - id: b
                url: https://example.org/b?n={{matrix.n}}
                save: "out/{{matrix.n}}-{{name}}.bin"
                matrix: {n: [1, 2, 3]}
            """])
        #expect(fixture.diagnostics("jobs.yaml") == """
            jobs.yaml:5:11: error: '{{nope}}' in the output path of job 'a' is not one of its params (add it under params:, or take it from the matrix as {{matrix.nope}})
                save: "out/{{nope}}.bin"
                      ^
            jobs.yaml:8:11: error: '{{name}}' in the output path of job 'b' is not one of its params (add it under params:, or take it from the matrix as {{matrix.name}})
                save: "out/{{matrix.n}}-{{name}}.bin"
                      ^

            """)
    }

    @Test func unknownKeyWithDidYouMean() throws {
        let fixture = try ConfigFixture(["r.yaml": """
            version: 1
            service: api
            base_url: https://api.example.org
            routes:
              list:
                path: /items
                heders: {Accept: application/json}
                retry: {limt: 3}
            """])
        #expect(fixture.diagnostics("r.yaml") == """
            r.yaml:7:5: error: unknown key 'heders' in route 'list' (did you mean 'headers'?)
                heders: {Accept: application/json}
                ^
            r.yaml:8:13: error: unknown key 'limt' in retry (did you mean 'limit'?)
                retry: {limt: 3}
                        ^

            """)
    }

    static let typesFile = """
        version: 1
        settings:
          concurrency: many
          fail_fast: maybe
          rate_limits: {example.org: 10 per second}
          timeout: {connect: 30 sec}
        jobs:
          - id: a
            url: https://example.org/a
            method: FETCH
            encoding: yaml
            cache: {policy: sometimes}
            validate: {status: "2xz", max_size: 10 parsecs}
            retry: {methods: [GET, POST], limit: -1}
          - id: b
            url: not a url
            download: b.bin
            checksum: md5:abc
          - id: a
            url: https://example.org/a2
            headers: [Accept]
        """

    @Test func wrongTypesBadEnumsAndBadGrammars() throws {
        let fixture = try ConfigFixture(["types.yaml": Self.typesFile])
        #expect(fixture.diagnostics("types.yaml") == """
            types.yaml:3:16: error: expected an integer, found 'many'
              concurrency: many
                           ^
            types.yaml:4:14: error: expected a boolean (true or false), found 'maybe'
              fail_fast: maybe
                         ^
            types.yaml:5:30: error: invalid rate '10 per second' (write requests per period, like 10/s, 600/m or 5/15s)
              rate_limits: {example.org: 10 per second}
                                         ^
            types.yaml:6:22: error: invalid duration '30 sec' (use a number with ms, s, m, h or d, like 250ms, 30s or 5m; a bare number is seconds)
              timeout: {connect: 30 sec}
                                 ^
            types.yaml:10:13: error: invalid HTTP method 'FETCH' (expected one of: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, TRACE, QUERY) (did you mean 'PATCH'?)
                method: FETCH
                        ^
            types.yaml:11:15: error: invalid encoding 'yaml' (expected one of: url, query, form, json, multipart)
                encoding: yaml
                          ^
            types.yaml:12:21: error: invalid cache policy 'sometimes' (expected one of: protocol, return_cache_else_load, return_cache_dont_load, reload)
                cache: {policy: sometimes}
                                ^
            types.yaml:13:24: error: invalid status '2xz' (use a code from 100 to 599, a class like "2xx", or a range like "200-299")
                validate: {status: "2xz", max_size: 10 parsecs}
                                   ^
            types.yaml:13:41: error: invalid size '10 parsecs' (use bytes or a unit: 512KiB, 10MB, 1GiB)
                validate: {status: "2xz", max_size: 10 parsecs}
                                                    ^
            types.yaml:14:28: warning: retrying POST is not safe: it is not idempotent (a retried POST may apply twice on the server; remove it unless the endpoint is idempotent)
                retry: {methods: [GET, POST], limit: -1}
                                       ^
            types.yaml:14:42: error: 'retry.limit' must be at least 0, found -1
                retry: {methods: [GET, POST], limit: -1}
                                                     ^
            types.yaml:16:10: error: invalid URL 'not a url' (use an absolute http:// or https:// URL with a host)
                url: not a url
                     ^
            types.yaml:18:15: error: invalid checksum 'md5:abc' (write sha256:<64 hex digits> or sha512:<128 hex digits>)
                checksum: md5:abc
                          ^
            types.yaml:19:9: error: job id 'a' is used twice (first used at types.yaml:8:9)
              - id: a
                    ^
            types.yaml:21:14: error: expected a mapping (headers), found a list
                headers: [Accept]
                         ^

            """)
    }

    static let routesFile = """
        version: 1
        service: api
        base_url: https://api.example.org
        routes:
          search:
            path: /search
            params:
              q: {type: string, required: true}
              page: {type: integer, default: 1, minimum: 1, maximum: 100}
              sort: {enum: [stars, updated]}
              lang: {pattern: "^[a-z]+$"}
              unused: {type: boolean}
            parameters: {q: "{{q}}", page: "{{page}}", sort: "{{sort}}", lang: "{{lang}}"}
          item:
            path: /items/{{id}}
          create:
            method: GET
            path: /items
            body: {text: hello}
          create_json:
            method: HEAD
            path: /items
            encoding: json
            headers: {X-Trace: "{{trace}}"}
        """

    static let jobsFile = """
        version: 1
        include: [api.routes.yaml, missing.routes.yaml]
        settings:
          output_dir: out
        jobs:
          - id: s1
            route: api.serch
          - id: s2
            route: api.search
            params: {q: swift, page: 0, sort: oldest, lang: "Swift", color: red}
          - id: s3
            route: api.search
            params: {page: two}
          - id: item
            route: api.item
            save: ../item.json
          - id: m
            route: api.search
            matrix: {lang: [swift, go]}
            params: {q: "{{matrix.langs}}", lang: "{{matrix.lang}}"}
            save: "search/{{matrix.lang}}.json"
            needs: [s5, item2]
          - id: s5
            route: api.search
            params: {q: x}
            save: search/go.json
            needs: [m]
          - id: tok
            url: https://example.org/${FETCHCTL_TEST_UNSET}
        """

    @Test func routeAndJobChecksAcrossIncludedFiles() throws {
        let fixture = try ConfigFixture(["api.routes.yaml": Self.routesFile, "jobs.yaml": Self.jobsFile])
        #expect(fixture.diagnostics("jobs.yaml") == """
            api.routes.yaml:12:7: warning: param 'unused' of route 'search' is used nowhere (use it as {{unused}} in path, parameters, query, headers or body, or remove it)
                  unused: {type: boolean}
                  ^
            api.routes.yaml:19:5: error: GET requests carry no body (remove body, or use another method such as POST)
                body: {text: hello}
                ^
            api.routes.yaml:23:15: error: HEAD requests carry no body, so encoding 'json' cannot be used (use encoding: query, or another method)
                encoding: json
                          ^
            api.routes.yaml:24:24: error: '{{trace}}' is not a param of route 'create_json' (declare it under params)
                headers: {X-Trace: "{{trace}}"}
                                   ^
            jobs.yaml:2:28: error: included file 'missing.routes.yaml' does not exist
            include: [api.routes.yaml, missing.routes.yaml]
                                       ^
            jobs.yaml:7:12: error: unknown route 'api.serch' (did you mean 'api.search'?)
                route: api.serch
                       ^
            jobs.yaml:10:30: error: param 'page' must be at least 1, found 0
                params: {q: swift, page: 0, sort: oldest, lang: "Swift", color: red}
                                         ^
            jobs.yaml:10:39: error: param 'sort' must be one of stars, updated, found 'oldest'
                params: {q: swift, page: 0, sort: oldest, lang: "Swift", color: red}
                                                  ^
            jobs.yaml:10:53: error: param 'lang' must match the pattern ^[a-z]+$, found 'Swift'
                params: {q: swift, page: 0, sort: oldest, lang: "Swift", color: red}
                                                                ^
            jobs.yaml:10:62: error: route 'api.search' has no param 'color' (its params: q, page, sort, lang, unused)
                params: {q: swift, page: 0, sort: oldest, lang: "Swift", color: red}
                                                                         ^
            jobs.yaml:12:12: error: job 's3' is missing required param 'q' of route 'api.search' (add it under params:)
                route: api.search
                       ^
            jobs.yaml:13:20: error: param 'page' must be an integer, found 'two'
                params: {page: two}
                               ^
            jobs.yaml:15:12: error: job 'item' is missing required param 'id' of route 'api.item' (add it under params:)
                route: api.item
                       ^
            jobs.yaml:16:11: error: output path '../item.json' of job 'item' is outside output_dir (use a relative path without '..' that stays inside out)
                save: ../item.json
                      ^
            jobs.yaml:20:17: error: '{{matrix.langs}}' is not defined in the matrix of job 'm' (did you mean '{{matrix.lang}}'?)
                params: {q: "{{matrix.langs}}", lang: "{{matrix.lang}}"}
                            ^
            jobs.yaml:22:17: error: job 'm' needs unknown job 'item2' (did you mean 'item'?)
                needs: [s5, item2]
                            ^
            jobs.yaml:26:11: error: jobs 'm[lang=go]' and 's5' both write 'search/go.json' (give each job its own path, e.g. with {{matrix.key}})
                save: search/go.json
                      ^
            jobs.yaml:27:13: error: needs cycle: m[lang=swift] → s5 → m[lang=swift] (a job cannot wait for itself; remove one of these needs)
                needs: [m]
                        ^
            jobs.yaml:29:10: warning: environment variable 'FETCHCTL_TEST_UNSET' is not set (set it, or give a default with ${FETCHCTL_TEST_UNSET:-default})
                url: https://example.org/${FETCHCTL_TEST_UNSET}
                     ^

            """)
    }

    @Test func unsetVariableIsAnErrorWhenRunning() throws {
        let fixture = try ConfigFixture(["j.yaml": """
            version: 1
            jobs:
              - id: a
                url: "${API:?set API to the server's URL}/a"
            """])
        #expect(fixture.diagnostics("j.yaml", mode: .run) == """
            j.yaml:4:10: error: environment variable 'API' is not set: set API to the server's URL (set it, or give a default with ${API:-default})
                url: "${API:?set API to the server's URL}/a"
                     ^

            """)
        #expect(fixture.diagnostics("j.yaml", environment: ["API": "http://127.0.0.1:9"], mode: .run) == "")
    }

    @Test func includeCycle() throws {
        let fixture = try ConfigFixture([
            "one.yaml": "version: 1\ninclude: [two.yaml]\njobs: []\n",
            "two.yaml": "version: 1\ninclude: [one.yaml]\n",
        ])
        #expect(fixture.diagnostics("one.yaml") == """
            two.yaml:2:11: error: include cycle: one.yaml → two.yaml → one.yaml
            include: [one.yaml]
                      ^

            """)
    }

    @Test func routeDefinedInTwoFiles() throws {
        let route = "version: 1\nservice: api\nbase_url: https://a.org\nroutes:\n  list: {path: /list}\n"
        let fixture = try ConfigFixture(["a.yaml": route, "b.yaml": route, "jobs.yaml": "version: 1\ninclude: [a.yaml, b.yaml]\njobs: []\n"])
        #expect(fixture.diagnostics("jobs.yaml") == """
            b.yaml:5:3: error: route 'api.list' is defined twice (first defined at a.yaml:5:3)
              list: {path: /list}
              ^

            """)
    }

    @Test func jsonAndGitHubFormats() throws {
        let fixture = try ConfigFixture(["r.yaml": "version: 1\nservice: api\nbase_url: https://a.org\nroutes:\n  a: {path: /a, methd: GET}\n"])
        #expect(fixture.diagnostics("r.yaml", format: .json) == """
            [
              {"file": "r.yaml", "line": 5, "column": 17, "severity": "error", "code": "unknown-key", "message": "unknown key 'methd' in route 'a'", "hint": "did you mean 'method'?"}
            ]

            """)
        #expect(fixture.diagnostics("r.yaml", format: .github) ==
            "::error file=r.yaml,line=5,col=17,title=unknown-key::unknown key 'methd' in route 'a' (did you mean 'method'?)\n")
    }

    /// Every file of the invalid corpus is rejected with the code its `# expect:` line names.
    @Test(arguments: InvalidCorpus.files)
    func invalidCorpusIsRejected(_ file: String) throws {
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let expected = try #require(text.split(separator: "\n").dropFirst().first?.replacingOccurrences(of: "# expect: ", with: ""))
        let config = ConfigLoader(environment: [:], mode: .validate).load([file])
        #expect(config.hasErrors)
        #expect(config.diagnostics.contains { $0.code == expected && $0.severity == .error },
                "\(config.diagnostics.map { "\($0.code): \($0.message)" })")
    }
}

@Suite struct DiagnosticSecretsTests {
    /// A secret-named variable's value quoted by a diagnostic is redacted; the source line shows the
    /// file as written (`${API_TOKEN}`), never the value.
    /// A placeholder may stand for the host, the port or any part after them; the scheme must be written.
    @Test func urlPlaceholdersMayStandForTheHostAndThePort() {
        #expect(ConfigReader.isValidHTTPURL("http://127.0.0.1:{{row.port}}/items/{{row.id}}"))
        #expect(ConfigReader.isValidHTTPURL("https://{{row.host}}:{{row.port}}/"))
        #expect(ConfigReader.isValidHTTPURL("https://{{row.host}}/x?q={{row.q}}"))
        #expect(!ConfigReader.isValidHTTPURL("{{row.scheme}}://example.org/"))
        #expect(!ConfigReader.isValidHTTPURL("ftp://{{row.host}}/"))
        #expect(!ConfigReader.isValidHTTPURL("http://example.org:{{row.port}}/a b"))
    }

    @Test func diagnosticsNeverQuoteASecret() throws {
        let fixture = try ConfigFixture(["a.yaml": """
            version: 1
            settings:
              concurrency: "${API_TOKEN}"
            jobs:
              - id: a
                url: "https://example.org/x y?k=${API_TOKEN}"
            """])
        let text = fixture.diagnostics("a.yaml", environment: ["API_TOKEN": "s3cr3t-value"])
        #expect(text == """
            a.yaml:3:16: error: expected an integer, found '<redacted>'
              concurrency: "${API_TOKEN}"
                           ^
            a.yaml:6:10: error: invalid URL 'https://example.org/x y?k=<redacted>' (use an absolute http:// or https:// URL with a host)
                url: "https://example.org/x y?k=${API_TOKEN}"
                     ^

            """)
    }
}
