import Testing
@testable import FetchKit

/// `validate` on captures and on placeholders in every templated field.
@Suite struct CaptureDiagnosticsTests {
    @Test func capturesMustNameAJobOfOneRequestAndOneOfItsCaptures() throws {
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            jobs:
              - id: login
                url: https://api.example.org/login
                capture: {token: {json: "$.token", secret: true}, both: {json: "$.a", header: B}, bad: {regex: "(("}}
              - id: many
                url: https://api.example.org/{{matrix.n}}
                matrix: {n: [1, 2]}
                capture: {id: {header: X-Id}}
              - id: use
                url: https://api.example.org/use
                auth: {bearer: "{{jobs.login.tokn}}"}
                headers: {X-A: "{{jobs.nobody.x}}", X-B: "{{jobs.many.id}}", X-C: "{{jobs.use.x}}", X-D: "{{jobs.login}}"}
                save: "{{jobs.login.token}}.json"
            """])
        #expect(fixture.diagnostics("jobs.yaml") == """
            jobs.yaml:5:75: error: capture 'both' gives 2 sources (json, header); give one
                capture: {token: {json: "$.token", secret: true}, both: {json: "$.a", header: B}, bad: {regex: "(("}}
                                                                                      ^
            jobs.yaml:5:100: error: capture 'bad' has an invalid regular expression '(('
                capture: {token: {json: "$.token", secret: true}, both: {json: "$.a", header: B}, bad: {regex: "(("}}
                                                                                                               ^
            jobs.yaml:10:9: error: '{{jobs.nobody.x}}': no job 'nobody' in the jobs file
              - id: use
                    ^
            jobs.yaml:10:9: error: '{{jobs.many.id}}': job 'many' is a matrix or data-file entry of many jobs, so which one's 'id' is meant is unclear (capture from a job without matrix or from)
              - id: use
                    ^
            jobs.yaml:10:9: error: '{{jobs.use.x}}': job 'use' captures nothing (add capture: {x: {json: "$.…"}} to job 'use')
              - id: use
                    ^
            jobs.yaml:10:9: error: '{{jobs.login}}' should name a job and one of its captures (write {{jobs.<job id>.<capture name>}})
              - id: use
                    ^
            jobs.yaml:10:9: error: '{{jobs.login.tokn}}': job 'login' has no capture 'tokn' (did you mean 'token'?)
              - id: use
                    ^
            jobs.yaml:14:11: error: '{{jobs.login.token}}' in an output path: output paths are fixed before any job runs (use captures in params, headers, auth, the URL or the body)
                save: "{{jobs.login.token}}.json"
                      ^

            """)
    }

    /// Before, a placeholder in a route job's headers or auth passed `validate` unnoticed.
    @Test func placeholdersInRouteJobHeadersAndAuthAreChecked() throws {
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            include: [routes.yaml]
            jobs:
              - id: a
                route: api.item
                params: {id: 1}
                headers: {X-Id: "{{id}}", X-Typo: "{{idd}}"}
                auth: {bearer: "{{token}}"}
              - id: b
                url: https://api.example.org/b
                method: POST
                body: {text: "hello {{name}}"}
            """, "routes.yaml": """
            version: 1
            service: api
            base_url: https://api.example.org
            routes:
              item: {path: "/items/{{id}}"}
            """])
        #expect(fixture.diagnostics("jobs.yaml") == """
            jobs.yaml:4:9: error: '{{token}}' in job 'a' is not one of its params (route 'api.item' has the params: id)
              - id: a
                    ^
            jobs.yaml:4:9: error: '{{idd}}' in job 'a' is not one of its params (did you mean 'id'?)
              - id: a
                    ^
            jobs.yaml:9:9: error: '{{name}}' in job 'b' is not one of its params (add it under params:)
              - id: b
                    ^

            """)
    }

    @Test func aFanOutNamesAWrittenOutJobAndUsesItsOwnName() throws {
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            jobs:
              - {id: list, url: "https://api.example.org/list"}
              - {id: rows, url: "https://api.example.org/{{row.line}}", from: ids.txt}
              - {id: a, url: "https://api.example.org/a/{{repo.id}}", for_each: {job: nobody, as: repo}}
              - {id: b, url: "https://api.example.org/b/{{repo.id}}", for_each: {job: rows, as: repo}}
              - {id: c, url: "https://api.example.org/c/{{item.id}}", for_each: {job: list, as: matrix}}
              - {id: d, url: "https://api.example.org/d/{{row.id}}", for_each: {job: list}, save: "d/{{item.number}}.json"}
            """, "ids.txt": "1\n"])
        #expect(fixture.diagnostics("jobs.yaml") == """
            jobs.yaml:5:75: error: job 'a' fans out over unknown job 'nobody'
              - {id: a, url: "https://api.example.org/a/{{repo.id}}", for_each: {job: nobody, as: repo}}
                                                                                      ^
            jobs.yaml:6:75: error: job 'b' fans out over 'rows', whose jobs come from a data file or a fan-out (fan out over a job written out in the jobs file)
              - {id: b, url: "https://api.example.org/b/{{repo.id}}", for_each: {job: rows, as: repo}}
                                                                                      ^
            jobs.yaml:7:85: error: invalid for_each name 'matrix' (a name like repo (used as {{repo.<field>}}); not matrix, row, jobs or page)
              - {id: c, url: "https://api.example.org/c/{{item.id}}", for_each: {job: list, as: matrix}}
                                                                                                ^
            jobs.yaml:8:10: error: '{{row.id}}' in job 'd' is not one of its params (add it under params:)
              - {id: d, url: "https://api.example.org/d/{{row.id}}", for_each: {job: list}, save: "d/{{item.number}}.json"}
                     ^

            """)
    }

    @Test func incrementalRecordsNeedAKeyAndDownloadsFeedNoFanOut() throws {
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            jobs:
              - {id: list, url: "https://api.example.org/list"}
              - {id: file, url: "https://api.example.org/f.json", download: f.json}
              - id: each
                url: "https://api.example.org/r/{{r.id}}"
                for_each: {job: list, as: r}
                incremental: {param: since, from: "$.t", initial: "0"}
              - {id: from-file, url: "https://api.example.org/x/{{r.id}}", for_each: {job: file, as: r}}
            """])
        let text = fixture.diagnostics("jobs.yaml")
        #expect(text.contains("error: job 'each' keeps an incremental cursor for each of its records, under its id, and without 'key' the id is the record's position (add key: with a value that names the record, e.g. key: \"{{r.id}}\")"), "\(text)")
        #expect(text.contains("error: job 'from-file' fans out over 'file', which downloads a file: its body goes to disk, not to the fan-out"), "\(text)")
    }
}
