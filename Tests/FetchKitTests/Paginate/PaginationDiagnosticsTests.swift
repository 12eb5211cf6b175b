import Testing
@testable import FetchKit

/// The mistakes a user can make in `paginate:` and its outputs, asserted on the exact text
/// `fetchctl validate` prints.
@Suite struct PaginationDiagnosticsTests {
    @Test func badPathsArePointedAtTheCharacterThatIsWrong() throws {
        let fixture = try ConfigFixture(["routes.yaml": """
            version: 1
            service: api
            base_url: https://api.example.org
            routes:
              a:
                path: /a
                paginate:
                  next: {json: "$.links[?(@.rel)]"}
                  items: $.data[1
                  stop: {while: "$...pageInfo.hasNextPage", total: "$.count"}
            """])
        #expect(fixture.diagnostics("routes.yaml") == """
            routes.yaml:8:29: error: invalid JSONPath '$.links[?(@.rel)]': filter selectors ([?…]) are not supported (select with names, indexes, '*' and slices)
                  next: {json: "$.links[?(@.rel)]"}
                                        ^
            routes.yaml:9:22: error: invalid JSONPath '$.data[1': a '[' is not closed (end the selectors with ']')
                  items: $.data[1
                                 ^
            routes.yaml:10:25: error: invalid JSONPath '$...pageInfo.hasNextPage': three dots in a row ('..' selects descendants: write ..name)
                  stop: {while: "$...pageInfo.hasNextPage", total: "$.count"}
                                    ^
            routes.yaml:10:56: error: 'stop.total' compares a count of records with 'items', which this paginate does not name (add items: "$.path.to.records")
                  stop: {while: "$...pageInfo.hasNextPage", total: "$.count"}
                                                                   ^

            """)
    }

    @Test func theNextRequestComesOneWay() throws {
        let fixture = try ConfigFixture(["routes.yaml": """
            version: 1
            service: api
            base_url: https://api.example.org
            routes:
              none: {path: /a, paginate: {next: {}}}
              unknown: {path: /b, paginate: {next: {link: next}}}
              cursor: {path: /c, paginate: {next: {cursor: {from: "$.next", param: "a..b"}}}}
              offset: {path: /d, paginate: {next: {offset: {param: offset, limit: 0}}}}
              page: {path: /e, paginate: {next: {page: {param: page}}}}
            """])
        #expect(fixture.diagnostics("routes.yaml") == """
            routes.yaml:5:37: error: paginate.next names no style (give one of: link_header, json, cursor, offset, page)
              none: {path: /a, paginate: {next: {}}}
                                                ^
            routes.yaml:6:41: error: unknown key 'link' in paginate.next
              unknown: {path: /b, paginate: {next: {link: next}}}
                                                    ^
            routes.yaml:7:72: error: invalid parameter name 'a..b' (a query parameter's name, or for a JSON body a dotted path like variables.after)
              cursor: {path: /c, paginate: {next: {cursor: {from: "$.next", param: "a..b"}}}}
                                                                                   ^
            routes.yaml:8:71: error: 'limit' must be at least 1, found 0
              offset: {path: /d, paginate: {next: {offset: {param: offset, limit: 0}}}}
                                                                                  ^
            routes.yaml:9:37: warning: page-number pagination without 'items' or a stop rule ends only at max_pages (1000) (add items: so an empty page ends it, or stop: {status: 404})
              page: {path: /e, paginate: {next: {page: {param: page}}}}
                                                ^

            """)
    }

    @Test func pagesAndRecordsNeedSomewhereToGo() throws {
        let fixture = try ConfigFixture(["jobs.yaml": """
            version: 1
            jobs:
              - id: one-file
                url: https://api.example.org/a
                paginate: {next: {link_header: next}}
                save: all.json
              - id: no-items
                url: https://api.example.org/b
                paginate: {next: {link_header: next}}
                save_items: b.jsonl
              - id: not-paginated
                url: https://api.example.org/c
                save: "c/{{page}}.json"
                save_items: c.jsonl
            """])
        #expect(fixture.diagnostics("jobs.yaml") == """
            jobs.yaml:6:11: error: job 'one-file' pages through results, and 'save' would write every page to one file (put {{page}} in the path (one file a page), or use save_items: to write the records as JSON Lines)
                save: all.json
                      ^
            jobs.yaml:10:17: error: 'save_items' writes the records that paginate.items names, and job 'no-items' has no 'items' (add items: "$.path.to.records" to the paginate block)
                save_items: b.jsonl
                            ^
            jobs.yaml:13:11: error: '{{page}}' numbers the pages of a paginated job, and job 'not-paginated' does not paginate (add a paginate block to the job or its route 'not-paginated')
                save: "c/{{page}}.json"
                      ^
            jobs.yaml:14:17: error: 'save_items' writes the records of every page, and job 'not-paginated' does not paginate (add a paginate block to the job or its route 'not-paginated', or use save:)
                save_items: c.jsonl
                            ^

            """)
    }
}
