import Testing
@testable import FetchKit

@Suite struct GrammarTests {
    @Test(arguments: [
        ("250ms", Duration.milliseconds(250)), ("30s", .seconds(30)), ("5m", .seconds(300)), ("1h", .seconds(3600)),
        ("1d", .seconds(86400)), ("1.5", .milliseconds(1500)), ("0.5s", .milliseconds(500)), ("90", .seconds(90)),
    ])
    func durations(_ text: String, _ expected: Duration) {
        #expect(DurationGrammar.parse(text) == expected)
    }

    @Test(arguments: ["", "30 sec", "s", "-1s", "1.s", ".5s", "1e3s", "10ms5", "99999999999999999999d", "1000000001"])
    func invalidDurations(_ text: String) {
        #expect(DurationGrammar.parse(text) == nil)
    }

    @Test func rates() {
        #expect(Rate.parse("10/s") == Rate(count: 10, period: .seconds(1)))
        #expect(Rate.parse("600/m") == Rate(count: 600, period: .seconds(60)))
        #expect(Rate.parse("5/15s") == Rate(count: 5, period: .seconds(15)))
        for bad in ["10", "10/", "/s", "0/s", "10/0s", "ten/s", "10 per second", "10/15"] { #expect(Rate.parse(bad) == nil, "\(bad)") }
    }

    @Test func sizes() {
        #expect(SizeGrammar.parse("512KiB") == 524_288)
        #expect(SizeGrammar.parse("10MB") == 10_000_000)
        #expect(SizeGrammar.parse("1.5GiB") == 1_610_612_736)
        #expect(SizeGrammar.parse("10 MB") == 10_000_000)
        #expect(SizeGrammar.parse("1048576") == 1_048_576)
        for bad in ["", "MB", "10 parsecs", "-1MB", "1..5KB"] { #expect(SizeGrammar.parse(bad) == nil, "\(bad)") }
    }

    @Test func statusSets() {
        #expect(StatusSet.parseElement("2xx") == 200...299)
        #expect(StatusSet.parseElement("200-204") == 200...204)
        #expect(StatusSet.parseElement("404") == 404...404)
        for bad in ["2xz", "6xx", "99", "600", "300-200", "abc"] { #expect(StatusSet.parseElement(bad) == nil, "\(bad)") }
        #expect(StatusSet([200...299, 304...304]).description == "2xx, 304")
    }

    @Test func checksums() {
        let hex = String(repeating: "ab", count: 32)
        #expect(Checksum.parse("sha256:\(hex.uppercased())") == Checksum(algorithm: .sha256, hex: hex))
        #expect(Checksum.parse("sha512:" + String(repeating: "0", count: 128))?.algorithm == .sha512)
        for bad in ["md5:abc", "sha256:abc", "sha256:" + String(repeating: "g", count: 64), hex] { #expect(Checksum.parse(bad) == nil) }
    }

    @Test func environmentInterpolation() {
        let env = EnvironmentInterpolator(environment: ["HOST": "h.org", "EMPTY": "", "API_TOKEN": "t0k"])
        #expect(env.resolve("https://${HOST}/x").text == "https://h.org/x")
        #expect(env.resolve("${EMPTY:-fallback}|${EMPTY-kept}").text == "fallback|")
        #expect(env.resolve("${NOPE:-d}").text == "d")
        #expect(env.resolve("cost: $$5 and $HOME").text == "cost: $5 and $HOME")
        #expect(env.resolve("${API_TOKEN}").secrets == ["t0k"])
        #expect(env.resolve("${HOST}").secrets == [])
        let missing = env.resolve("${NOPE:?set NOPE}")
        #expect(missing.missing.map(\.name) == ["NOPE"])
        #expect(missing.missing.first?.message == "set NOPE")
        #expect(env.resolve("${HOST").syntaxError != nil)
        #expect(env.resolve("${1BAD}").syntaxError != nil)
    }

    @Test func templates() {
        let t = Template("/repos/{{owner}}/{{ repo }}/x")
        #expect(t.placeholders == ["owner", "repo"])
        #expect(t.render { $0.uppercased() } == "/repos/OWNER/REPO/x")
        #expect(Template("{{matrix.os}}").solePlaceholder == "matrix.os")
        #expect(Template("a {{b}}").solePlaceholder == nil)
        #expect(Template("plain").hasPlaceholders == false)
    }

    @Test func didYouMean() {
        #expect(EditDistance.hint(for: "heders", among: ["headers", "timeout"]) == "did you mean 'headers'?")
        #expect(EditDistance.hint(for: "zzzzzz", among: ["headers", "timeout"]) == nil)
    }
}
