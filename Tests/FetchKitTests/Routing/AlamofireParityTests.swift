// Parity table: FetchKit's form / JSON parameter encoders versus Alamofire 5.
//
// Every expected string below is what Alamofire 5 outputs for the equivalent input:
//   - `URLEncodedFormEncoder` / `URLEncodedFormParameterEncoder`
//     (Alamofire `Source/Features/URLEncodedFormEncoder.swift`, `Source/Core/ParameterEncoder.swift`)
//   - `JSONParameterEncoder.sortedKeys` (a `JSONEncoder` with `outputFormatting = .sortedKeys`)
//
// Cases marked "Alamofire: <Class>.<test>" are lifted from Alamofire's `Tests/ParameterEncoderTests.swift`
// (classes `URLEncodedFormEncoderTests`, `URLEncodedFormParameterEncoderTests`, `JSONParameterEncoderTests`,
// `SortedKeysJSONParameterEncoderTests`). A `ParameterValue` stands in for the `Encodable` value Alamofire
// was given: `.object` ~ a struct / `[String: T]` (keyed container, insertion order), `.array` ~ `[T]`
// (unkeyed container), `.null` ~ `Optional.none`, scalars ~ single-value containers.
//
// Cases marked "computed from source" are not in Alamofire's suite; they were derived by hand from
// `URLEncodedFormEncoder.swift` and cross-checked against a line-by-line re-implementation of its
// `URLEncodedFormComponent.set(to:at:)` + `URLEncodedFormSerializer`. The rules that matter:
//   * Escaping: `escape(_:)` = `addingPercentEncoding(withAllowedCharacters: .afURLQueryAllowed + " ")`,
//     then spaces -> "%20" (.percentEscaped) or "+" (.plusReplaced). `.afURLQueryAllowed` is
//     `.urlQueryAllowed` minus `:#[]@` and `!$&'()*+,;=`, i.e. ALPHA DIGIT `-._~` `/` `?` survive.
//     Keys are escaped *after* the key path is built, so brackets always show up as `%5B` / `%5D`.
//   * Sorting (`alphabetizeKeyValuePairs`, default true): at every level the serializer sorts the
//     finished, already-escaped "key=value" segment strings (`segments.sorted()`), *including array
//     elements*. For nested containers a segment is the whole "&"-joined child string.
//   * Doubles are `String(value)` (Swift's shortest round-trip description: "1.0", "1e+20", "1e-05").
//   * Bools: .numeric -> "1"/"0" (default), .literal -> "true"/"false".
//   * nil: default `NilEncoding.dropKey` returns nil from `encodeNil()`, so nothing is stored.
//   * Empty arrays / objects never call `context.component.set`, so they leave no trace; arrays whose
//     elements were dropped are compacted (`set` appends when `index >= array.count`).
//
// Darwin vs Linux: none of the form cases depend on the platform (`String(Double)` is stdlib; the
// `.urlQueryAllowed` set is the same in swift-corelibs-foundation). For JSON, `.sortedKeys` orders keys
// with `NSString.compare([.numeric, .caseInsensitive, .forcedOrdering])` on Darwin (legacy) but by
// UTF-8 bytes in swift-foundation (Linux); the JSON cases only use lower-case ASCII keys without digits
// so both orders agree. Doubles with a non-representable decimal expansion (0.1) and huge exponents are
// avoided in JSON for the same reason; `1.0` prints as `1` on both.

import Foundation
import Testing
@testable import FetchKit

@Suite("Alamofire 5 parity: URLEncodedFormEncoder and JSONParameterEncoder")
struct AlamofireParityTests {
    // MARK: - Form cases

    struct FormCase: Sendable, CustomTestStringConvertible {
        let name: String
        let input: ParameterValue
        let encoder: URLEncodedFormEncoder
        let expected: String

        init(_ name: String, _ input: ParameterValue,
             _ encoder: URLEncodedFormEncoder = URLEncodedFormEncoder(), expected: String) {
            self.name = name
            self.input = input
            self.encoder = encoder
            self.expected = expected
        }

        var testDescription: String { name }

        static var all: [FormCase] {
            liftedStructure + liftedScalars + liftedEscaping + computedStructure + computedOrdering
                + computedScalars + computedEscaping
        }

        /// Alamofire's `EncodableStruct` fixture:
        /// `one = "one", two = 2, three = true, four = [1, 2, 3], five = ["a": "a"],
        ///  six = ["a": ["b": "b"]], seven = NestedEncodableStruct(a: "a")`, in declaration order.
        static let encodableStruct: ParameterValue = [
            "one": "one",
            "two": 2,
            "three": true,
            "four": [1, 2, 3],
            "five": ["a": "a"],
            "six": ["a": ["b": "b"]],
            "seven": ["a": "a"],
        ]

        /// Alamofire's `EncodableSubclass`: superclass keys `one, two, three`, then `four`, `five`.
        static let encodableSubclass: ParameterValue = [
            "one": "one",
            "two": 2,
            "three": true,
            "four": [1, 2, 3],
            "five": ["a": "a", "b": "b"],
        ]

        // MARK: Lifted from Alamofire: nesting, arrays, sort order

        static let liftedStructure: [FormCase] = [
            // Alamofire: URLEncodedFormEncoderTests.testEncoderCanEncodeDictionary
            FormCase("flat dictionary", ["a": "a"], expected: "a=a"),
            // Alamofire: URLEncodedFormEncoderTests.testThatNestedDictionariesHaveBracketedKeys
            FormCase("nested dictionary has bracketed keys", ["a": ["b": "b"]], expected: "a%5Bb%5D=b"),
            // Alamofire: URLEncodedFormEncoderTests.testThatEncodableStructCanBeEncoded
            FormCase(
                "struct with nested objects and arrays, sorted",
                encodableStruct,
                expected: "five%5Ba%5D=a&four%5B%5D=1&four%5B%5D=2&four%5B%5D=3&one=one&seven%5Ba%5D=a&six%5Ba%5D%5Bb%5D=b&three=1&two=2"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatEncodableSubclassCanBeEncodedInImplementationOrderWhenAlphabetizeKeysIsFalse
            FormCase(
                "struct in insertion order when alphabetizeKeyValuePairs is false",
                encodableStruct,
                URLEncodedFormEncoder(alphabetizeKeyValuePairs: false),
                expected: "one=one&two=2&three=1&four%5B%5D=1&four%5B%5D=2&four%5B%5D=3&five%5Ba%5D=a&six%5Ba%5D%5Bb%5D=b&seven%5Ba%5D=a"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatEncodableStructCanBeEncodedWithIndexInBrackets
            FormCase(
                "struct with indexInBrackets arrays",
                encodableStruct,
                URLEncodedFormEncoder(arrayEncoding: .indexInBrackets),
                expected: "five%5Ba%5D=a&four%5B0%5D=1&four%5B1%5D=2&four%5B2%5D=3&one=one&seven%5Ba%5D=a&six%5Ba%5D%5Bb%5D=b&three=1&two=2"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatEncodableSubclassCanBeEncoded
            FormCase(
                "subclass-shaped object, brackets",
                encodableSubclass,
                expected: "five%5Ba%5D=a&five%5Bb%5D=b&four%5B%5D=1&four%5B%5D=2&four%5B%5D=3&one=one&three=1&two=2"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatEncodableSubclassCanBeEncodedWithIndexInBrackets
            FormCase(
                "subclass-shaped object, indexInBrackets",
                encodableSubclass,
                URLEncodedFormEncoder(arrayEncoding: .indexInBrackets),
                expected: "five%5Ba%5D=a&five%5Bb%5D=b&four%5B0%5D=1&four%5B1%5D=2&four%5B2%5D=3&one=one&three=1&two=2"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatEncodableClassWithNoInheritanceCanBeEncoded
            FormCase(
                "flat object sorted by key",
                ["one": "one", "two": 2, "three": true],
                expected: "one=one&three=1&two=2"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatEncodableSuperclassCanBeEncodedWithIndexInBrackets
            FormCase(
                "array holding one object, indexInBrackets",
                ["foo": [["one": "one", "two": 2, "three": true]]],
                URLEncodedFormEncoder(arrayEncoding: .indexInBrackets),
                expected: "foo%5B0%5D%5Bone%5D=one&foo%5B0%5D%5Bthree%5D=1&foo%5B0%5D%5Btwo%5D=2"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatArrayNestedDictionaryIntValueCanBeEncodedWithIndexInBrackets
            FormCase(
                "array of objects with int values, indexInBrackets",
                ["foo": [["bar": 2], ["qux": 3], ["quy": 4]]],
                URLEncodedFormEncoder(arrayEncoding: .indexInBrackets),
                expected: "foo%5B0%5D%5Bbar%5D=2&foo%5B1%5D%5Bqux%5D=3&foo%5B2%5D%5Bquy%5D=4"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatArrayNestedDictionaryStringValueCanBeEncodedWithIndexInBrackets
            FormCase(
                "array of objects with string values, indexInBrackets",
                ["foo": [["bar": "2"], ["qux": "3"], ["quy": "4"]]],
                URLEncodedFormEncoder(arrayEncoding: .indexInBrackets),
                expected: "foo%5B0%5D%5Bbar%5D=2&foo%5B1%5D%5Bqux%5D=3&foo%5B2%5D%5Bquy%5D=4"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatArrayNestedDictionaryBoolValueCanBeEncodedWithIndexInBrackets
            FormCase(
                "array of objects with bool values, indexInBrackets",
                ["foo": [["bar": true], ["qux": false], ["quy": true]]],
                URLEncodedFormEncoder(arrayEncoding: .indexInBrackets),
                expected: "foo%5B0%5D%5Bbar%5D=1&foo%5B1%5D%5Bqux%5D=0&foo%5B2%5D%5Bquy%5D=1"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatArraysCanBeEncodedWithoutBrackets
            FormCase(
                "array without brackets",
                ["array": [1, 2]],
                URLEncodedFormEncoder(arrayEncoding: .noBrackets),
                expected: "array=1&array=2"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatNilCanBeEncodedByDropping
            // (the default NilEncoding.dropKey; `[String: String?] = ["a": nil]` encodes to "").
            FormCase("nil value drops the key", ["a": nil], expected: ""),
            // Alamofire: URLEncodedFormParameterEncoderTests.testThatQueryIsNilWhenEncodableResultsInAnEmptyString
            // (`[String: String]()` makes the encoder return "", which the parameter encoder turns into no query).
            FormCase("empty root object", .object([]), expected: ""),
        ]

        // MARK: Lifted from Alamofire: scalars

        static let liftedScalars: [FormCase] = [
            // Alamofire: URLEncodedFormEncoderTests.testEncoderCanEncodeInt64 (and the Int8...UInt64 siblings)
            FormCase("int", ["a": 1], expected: "a=1"),
            // Alamofire: URLEncodedFormEncoderTests.testEncoderCanEncodeDouble — `String(1.0)` keeps ".0".
            FormCase("double with zero fraction keeps .0", ["a": 1.0], expected: "a=1.0"),
            // Alamofire: URLEncodedFormEncoderTests.testThatDatesCanBeEncoded — `.deferredToDate` encodes
            // `Date(timeIntervalSinceReferenceDate: 123.456)` as the Double 123.456; given here as that Double.
            FormCase("double 123.456", ["date": 123.456], expected: "date=123.456"),
            // Alamofire: URLEncodedFormEncoderTests.testThatDatesCanBeEncodedAsSecondsSince1970 (the Double it prints)
            FormCase("double 978307323.456", ["date": 978_307_323.456], expected: "date=978307323.456"),
            // Alamofire: URLEncodedFormEncoderTests.testThatDatesCanBeEncodedAsMillisecondsSince1970 (the Double it prints)
            FormCase("large double keeps .0", ["date": 978_307_323_456.0], expected: "date=978307323456.0"),
            // Alamofire: URLEncodedFormEncoderTests.testThatDatesCanBeEncodedAsISO8601Formatted — the date as a plain string.
            FormCase(
                "ISO 8601 date string escapes colons",
                ["date": "2001-01-01T00:02:03Z"],
                expected: "date=2001-01-01T00%3A02%3A03Z"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatDatesCanBeEncodedAsFormatted — the formatted date as a plain string.
            FormCase(
                "formatted date string with a space",
                ["date": "2001-01-01 00:02:03.4560"],
                expected: "date=2001-01-01%2000%3A02%3A03.4560"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatDataCanBeEncoded — base64 "ZGF0YQ==" given as a string.
            FormCase("base64 string escapes =", ["data": "ZGF0YQ=="], expected: "data=ZGF0YQ%3D%3D"),
            // Alamofire: URLEncodedFormEncoderTests.testThatBoolsCanBeLiteralEncoded
            // (also URLEncodedFormParameterEncoderTests.testThatEncoderCanBeCustomized)
            FormCase(
                "bool literal",
                ["bool": true],
                URLEncodedFormEncoder(boolEncoding: .literal),
                expected: "bool=true"
            ),
        ]

        // MARK: Lifted from Alamofire: escaping and unicode

        static let chinese = String(repeating: "一二三四五六七八九十", count: 2000)
        static let chineseExpected: String = "chinese=" + String(
            repeating: "%E4%B8%80%E4%BA%8C%E4%B8%89%E5%9B%9B%E4%BA%94%E5%85%AD%E4%B8%83%E5%85%AB%E4%B9%9D%E5%8D%81",
            count: 2000
        )

        static let liftedEscaping: [FormCase] = [
            // Alamofire: URLEncodedFormEncoderTests.testThatSpacesCanBeEncodedAsPluses
            FormCase(
                "spaces plusReplaced",
                ["spaces": "replace with spaces"],
                URLEncodedFormEncoder(spaceEncoding: .plusReplaced),
                expected: "spaces=replace+with+spaces"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatUnreservedCharactersAreNotPercentEscaped
            FormCase(
                "unreserved characters are not escaped",
                [
                    "lowercase": "abcdefghijklmnopqrstuvwxyz",
                    "numbers": "0123456789",
                    "uppercase": "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                ],
                expected: "lowercase=abcdefghijklmnopqrstuvwxyz&numbers=0123456789&uppercase=ABCDEFGHIJKLMNOPQRSTUVWXYZ"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatReservedCharactersArePercentEscaped
            FormCase(
                "reserved characters are escaped",
                ["reserved": ":#[]@!$&'()*+,;="],
                expected: "reserved=%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatIllegalASCIICharactersArePercentEscaped
            FormCase(
                "illegal ASCII characters are escaped",
                ["illegal": " \"#%<>[]\\^`{}|"],
                expected: "illegal=%20%22%23%25%3C%3E%5B%5D%5C%5E%60%7B%7D%7C"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatAmpersandsInKeysAndValuesArePercentEscaped
            FormCase(
                "ampersands in keys and values",
                ["foo&bar": "baz&qux", "foobar": "bazqux"],
                expected: "foo%26bar=baz%26qux&foobar=bazqux"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testThatQuestionMarksInKeysAndValuesAreNotPercentEscaped
            FormCase("question marks are not escaped", ["?foo?": "?bar?"], expected: "?foo?=?bar?"),
            // Alamofire: URLEncodedFormEncoderTests.testThatSlashesInKeysAndValuesAreNotPercentEscaped
            FormCase("slashes are not escaped", ["foo": "/bar/baz/qux"], expected: "foo=/bar/baz/qux"),
            // Alamofire: URLEncodedFormEncoderTests.testThatSpacesInKeysAndValuesArePercentEscaped
            FormCase("spaces percentEscaped in keys and values", [" foo ": " bar "], expected: "%20foo%20=%20bar%20"),
            // Alamofire: URLEncodedFormEncoderTests.testThatPlusesInKeysAndValuesArePercentEscaped
            FormCase("pluses are escaped", ["+foo+": "+bar+"], expected: "%2Bfoo%2B=%2Bbar%2B"),
            // Alamofire: URLEncodedFormEncoderTests.testThatPercentsInKeysAndValuesArePercentEscaped
            FormCase("percent signs are escaped", ["percent%": "%25"], expected: "percent%25=%2525"),
            // Alamofire: URLEncodedFormEncoderTests.testThatNonLatinCharactersArePercentEscaped
            FormCase(
                "non-Latin characters and emoji",
                ["french": "français", "japanese": "日本語", "arabic": "العربية", "emoji": "😃"],
                expected: "arabic=%D8%A7%D9%84%D8%B9%D8%B1%D8%A8%D9%8A%D8%A9&emoji=%F0%9F%98%83&french=fran%C3%A7ais&japanese=%E6%97%A5%E6%9C%AC%E8%AA%9E"
            ),
            // Alamofire: URLEncodedFormEncoderTests.testStringWithThousandsOfChineseCharactersIsPercentEscaped
            FormCase(
                "thousands of CJK characters",
                ["chinese": .string(chinese)],
                expected: chineseExpected
            ),
        ]

    }

    @Test(arguments: FormCase.all)
    func formEncoding(_ c: FormCase) throws {
        let output: String = try c.encoder.encode(c.input)
        #expect(output == c.expected)
    }

    // Alamofire: URLEncodedFormEncoderTests.testThatARootArrayCannotBeEncoded / testThatARootValueCannotBeEncoded
    // (`URLEncodedFormEncoder.Error.invalidRootObject`).
    static let nonObjectRoots: [ParameterValue] = [[1], "string", 1, true]

    @Test(arguments: AlamofireParityTests.nonObjectRoots)
    func formEncodingRejectsNonObjectRoot(_ root: ParameterValue) {
        #expect(throws: (any Error).self) {
            let _: String = try URLEncodedFormEncoder().encode(root)
        }
    }

    // MARK: - JSON cases (Alamofire's JSONParameterEncoder.sortedKeys)

    struct JSONCase: Sendable, CustomTestStringConvertible {
        let name: String
        let input: ParameterValue
        let encoder: JSONParameterEncoder
        let expected: String

        init(_ name: String, _ input: ParameterValue,
             _ encoder: JSONParameterEncoder = JSONParameterEncoder(sortedKeys: true), expected: String) {
            self.name = name
            self.input = input
            self.encoder = encoder
            self.expected = expected
        }

        var testDescription: String { name }

        static let all: [JSONCase] = [
            // Alamofire: JSONParameterEncoderTests.testThatDataIsProperlyEncodedAndProperContentTypeIsSet
            // (also testThatJSONEncoderDefaultWorks)
            JSONCase("single property", ["property": "property"], expected: #"{"property":"property"}"#),
            // Alamofire: SortedKeysJSONParameterEncoderTests.testTestJSONEncoderSortedKeysHasSortedKeys
            JSONCase("sorted keys", ["z": "z", "a": "a", "p": "p"], expected: #"{"a":"a","p":"p","z":"z"}"#),
            // Computed (JSONEncoder + .sortedKeys): nested objects are sorted at every level.
            JSONCase(
                "nested objects sorted at every level",
                ["b": ["z": 1, "a": ["y": 2, "x": 3]], "a": 0],
                expected: #"{"a":0,"b":{"a":{"x":3,"y":2},"z":1}}"#
            ),
            // Computed (JSONEncoder + .sortedKeys): nested object with an array.
            JSONCase(
                "nested object with array",
                ["user": ["name": "Ann", "tags": ["x", "y"]], "id": 7],
                expected: #"{"id":7,"user":{"name":"Ann","tags":["x","y"]}}"#
            ),
            // Computed (JSONEncoder + .sortedKeys): arrays keep their order (unlike the form encoder);
            // keys inside each element are sorted.
            JSONCase(
                "array of objects keeps element order",
                ["items": [["qty": 2, "name": "b"], ["name": "a"]]],
                expected: #"{"items":[{"name":"b","qty":2},{"name":"a"}]}"#
            ),
            // Computed (JSONEncoder): non-ASCII is written as raw UTF-8, not \u escapes.
            JSONCase(
                "unicode is not escaped",
                ["emoji": "😃", "japanese": "日本語", "french": "français"],
                expected: #"{"emoji":"😃","french":"français","japanese":"日本語"}"#
            ),
            // Computed (JSONEncoder): "/" is escaped as "\/" unless .withoutEscapingSlashes (Darwin and swift-foundation).
            JSONCase(
                "slashes are escaped",
                ["path": "/bar/baz", "url": "https://example.com/a?b=c"],
                expected: #"{"path":"\/bar\/baz","url":"https:\/\/example.com\/a?b=c"}"#
            ),
            // Computed (JSONEncoder): an explicitly encoded nil (e.g. `[String: Int?]`) is `null`, in objects and
            // arrays alike. (A synthesized Codable struct would omit the key via encodeIfPresent instead.)
            JSONCase("null in object and array", ["a": nil, "b": [1, nil]], expected: #"{"a":null,"b":[1,null]}"#),
            // Computed (JSONEncoder): bools are true/false.
            JSONCase("bools", ["t": true, "f": false], expected: #"{"f":false,"t":true}"#),
            // Computed (JSONEncoder): ints and exactly representable doubles.
            JSONCase(
                "numbers",
                ["i": 42, "n": -7, "d": 1.5, "z": 0, "neg": -0.25],
                expected: #"{"d":1.5,"i":42,"n":-7,"neg":-0.25,"z":0}"#
            ),
            // Computed (JSONEncoder): a Double with zero fraction prints without ".0" (swift-foundation strips the
            // ".0" from `description`; Darwin's JSONSerialization-backed encoder also prints 1).
            JSONCase("double with zero fraction", ["whole": 1.0], expected: #"{"whole":1}"#),
            // Computed (JSONEncoder): empty containers are kept (unlike the form encoder).
            JSONCase("empty containers are kept", ["a": .array([]), "o": .object([])], expected: #"{"a":[],"o":{}}"#),
            // Computed (JSONEncoder): quote, backslash and newline escapes.
            JSONCase(
                "string escapes",
                ["q": "say \"hi\"\\ now\n"],
                expected: #"{"q":"say \"hi\"\\ now\n"}"#
            ),
            // Computed (JSONEncoder): URL-reserved characters, space and % are left alone in JSON.
            JSONCase(
                "reserved characters are not escaped",
                ["r": ":#[]@!$&'()*+,;= %?"],
                expected: ##"{"r":":#[]@!$&'()*+,;= %?"}"##
            ),
            // Computed (JSONEncoder): a top-level array is valid JSON for JSONParameterEncoder.
            JSONCase("top-level array", [1, "a", true, nil], expected: #"[1,"a",true,null]"#),
        ]
    }

    @Test(arguments: JSONCase.all)
    func jsonEncoding(_ c: JSONCase) throws {
        let data: Data = try c.encoder.encode(c.input)
        #expect(String(decoding: data, as: UTF8.self) == c.expected)
    }
}
