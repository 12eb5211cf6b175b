import Testing
@testable import FetchKit

// Form cases computed from Alamofire's URLEncodedFormEncoder source (URLEncodedFormSerializer and
// URLEncodedFormComponent.set(to:at:)) rather than lifted from its tests; see AlamofireParityTests.swift
// for the lifted cases and how each expected string was checked.
typealias FormCase = AlamofireParityTests.FormCase

extension AlamofireParityTests.FormCase {
        // MARK: Computed from source: structure (key paths, empties, nil)

        static let computedStructure: [FormCase] = [
            // Computed from source: KeyPathEncoding.dots = { ".\($0)" }; "." is unreserved, so no escaping.
            FormCase(
                "dotted key path",
                ["a": ["b": "b"]],
                URLEncodedFormEncoder(keyPathEncoding: .dots),
                expected: "a.b=b"
            ),
            // Computed from source: dots only affect object sub-keys; arrays still use ArrayEncoding ("[]" -> %5B%5D).
            FormCase(
                "dotted key paths with a nested array",
                ["parent": ["child": ["grandchild": "value"]], "list": ["x": [1, 2]]],
                URLEncodedFormEncoder(keyPathEncoding: .dots),
                expected: "list.x%5B%5D=1&list.x%5B%5D=2&parent.child.grandchild=value"
            ),
            // Computed from source: dots + indexInBrackets.
            FormCase(
                "dotted key path with indexInBrackets",
                ["a": ["b": [1, 2]]],
                URLEncodedFormEncoder(arrayEncoding: .indexInBrackets, keyPathEncoding: .dots),
                expected: "a.b%5B0%5D=1&a.b%5B1%5D=2"
            ),
            // Computed from source: the KeyPathEncoding doc example `parent[child][grandchild]=value`, escaped.
            FormCase(
                "bracketed key path, three levels",
                ["parent": ["child": ["grandchild": "value"]]],
                expected: "parent%5Bchild%5D%5Bgrandchild%5D=value"
            ),
            // Computed from source: a literal "[b]" in a key escapes exactly like a nested object would.
            FormCase("brackets inside a key are escaped", ["a[b]": "c"], expected: "a%5Bb%5D=c"),
            // Computed from source: empty containers never reach `set(to:at:)`, so their keys vanish.
            FormCase(
                "empty array and empty object are dropped",
                ["a": .array([]), "b": .object([]), "c": "x"],
                expected: "c=x"
            ),
            // Computed from source: containers holding only empty containers vanish too.
            FormCase(
                "nested empties produce nothing",
                ["a": ["b": .array([]), "c": .object([])], "d": [.array([]), .object([])]],
                expected: ""
            ),
            // Computed from source: nil drops the key at every level (NilEncoding.dropKey).
            FormCase(
                "nil in nested object is dropped",
                ["a": nil, "b": ["c": nil, "d": 1], "e": "x"],
                expected: "b%5Bd%5D=1&e=x"
            ),
            // Computed from source: objects / arrays made only of nils vanish.
            FormCase("containers of only nils vanish", ["a": ["b": nil], "c": [nil]], expected: ""),
            // Computed from source: a nil array element is dropped and the array is compacted —
            // `set` appends when `index >= array.count`, so indices renumber (a[1]=2, not a[2]=2).
            FormCase(
                "nil array element is dropped and indices compact",
                ["a": [1, nil, 2]],
                URLEncodedFormEncoder(arrayEncoding: .indexInBrackets),
                expected: "a%5B0%5D=1&a%5B1%5D=2"
            ),
            // Computed from source: same with brackets.
            FormCase("nil array element is dropped, brackets", ["a": [1, nil, 2]], expected: "a%5B%5D=1&a%5B%5D=2"),
            // Computed from source: nested arrays, indexInBrackets.
            FormCase(
                "array of arrays, indexInBrackets",
                ["a": [[1, 2], [3]]],
                URLEncodedFormEncoder(arrayEncoding: .indexInBrackets),
                expected: "a%5B0%5D%5B0%5D=1&a%5B0%5D%5B1%5D=2&a%5B1%5D%5B0%5D=3"
            ),
            // Computed from source: nested arrays, brackets (each level adds "[]").
            FormCase("array of arrays, brackets", ["a": [[1, 2], [3]]], expected: "a%5B%5D%5B%5D=1&a%5B%5D%5B%5D=2&a%5B%5D%5B%5D=3"),
            // Computed from source: noBrackets drops the array part of the key but keeps object sub-keys.
            FormCase(
                "array of objects, noBrackets",
                ["a": [["b": 1], ["b": 2]]],
                URLEncodedFormEncoder(arrayEncoding: .noBrackets),
                expected: "a%5Bb%5D=1&a%5Bb%5D=2"
            ),
        ]

        // MARK: Computed from source: ordering

        static let computedOrdering: [FormCase] = [
            // Computed from source: array segments are sorted too, so element order is lost by default.
            FormCase("array values are sorted", ["a": [3, 1, 2]], expected: "a%5B%5D=1&a%5B%5D=2&a%5B%5D=3"),
            // Computed from source: with alphabetizeKeyValuePairs false, array order is kept.
            FormCase(
                "array values keep order when not alphabetized",
                ["a": [3, 1, 2]],
                URLEncodedFormEncoder(alphabetizeKeyValuePairs: false),
                expected: "a%5B%5D=3&a%5B%5D=1&a%5B%5D=2"
            ),
            // Computed from source: noBrackets values are sorted the same way.
            FormCase(
                "noBrackets values are sorted",
                ["ids": [3, 1, 2]],
                URLEncodedFormEncoder(arrayEncoding: .noBrackets),
                expected: "ids=1&ids=2&ids=3"
            ),
            // Computed from source: indexInBrackets segments sort as strings: "%5B1%5D" < "%5B10%5D" < "%5B2%5D".
            FormCase(
                "indexInBrackets sorts indices as strings",
                ["a": ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]],
                URLEncodedFormEncoder(arrayEncoding: .indexInBrackets),
                expected: "a%5B0%5D=a&a%5B1%5D=b&a%5B10%5D=k&a%5B2%5D=c&a%5B3%5D=d&a%5B4%5D=e&a%5B5%5D=f&a%5B6%5D=g&a%5B7%5D=h&a%5B8%5D=i&a%5B9%5D=j"
            ),
            // Computed from source: not alphabetized, indices stay numeric order.
            FormCase(
                "indexInBrackets in order when not alphabetized",
                ["a": ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]],
                URLEncodedFormEncoder(arrayEncoding: .indexInBrackets, alphabetizeKeyValuePairs: false),
                expected: "a%5B0%5D=a&a%5B1%5D=b&a%5B2%5D=c&a%5B3%5D=d&a%5B4%5D=e&a%5B5%5D=f&a%5B6%5D=g&a%5B7%5D=h&a%5B8%5D=i&a%5B9%5D=j&a%5B10%5D=k"
            ),
            // Computed from source: each element of an array of objects becomes one joined segment and those
            // segments are sorted, so the element with id=1 moves ahead of the one with id=2.
            FormCase(
                "array of objects is reordered by sorting",
                ["users": [["id": 2, "name": "a"], ["id": 1, "name": "b"]]],
                expected: "users%5B%5D%5Bid%5D=1&users%5B%5D%5Bname%5D=b&users%5B%5D%5Bid%5D=2&users%5B%5D%5Bname%5D=a"
            ),
            // Computed from source: same input, insertion order.
            FormCase(
                "array of objects in insertion order",
                ["users": [["id": 2, "name": "a"], ["id": 1, "name": "b"]]],
                URLEncodedFormEncoder(alphabetizeKeyValuePairs: false),
                expected: "users%5B%5D%5Bid%5D=2&users%5B%5D%5Bname%5D=a&users%5B%5D%5Bid%5D=1&users%5B%5D%5Bname%5D=b"
            ),
            // Computed from source: insertion order at every level when alphabetizeKeyValuePairs is false.
            FormCase(
                "nested insertion order when not alphabetized",
                ["z": 1, "a": 2, "m": ["y": 1, "b": 2]],
                URLEncodedFormEncoder(alphabetizeKeyValuePairs: false),
                expected: "z=1&a=2&m%5By%5D=1&m%5Bb%5D=2"
            ),
            // Computed from source: sorting compares escaped segments: "a%21=2" < "a%5Bx%5D=1" ('2' < '5'),
            // although the raw key "a" sorts before "a!".
            FormCase(
                "sorting uses escaped keys",
                ["a": ["x": 1], "a!": 2],
                expected: "a%21=2&a%5Bx%5D=1"
            ),
            // Computed from source: plain `String <` — upper case sorts before lower case.
            FormCase("upper case sorts before lower case", ["b": 1, "B": 2, "a": 3], expected: "B=2&a=3&b=1"),
            // Computed from source: a CJK key escapes to "%E6..." and '%' < 'a', so it sorts first.
            FormCase("escaped unicode key sorts before ASCII", ["日本": "x", "a": "y"], expected: "%E6%97%A5%E6%9C%AC=x&a=y"),
        ]

        // MARK: Computed from source: scalars

        static let computedScalars: [FormCase] = [
            // Computed from source: BoolEncoding.numeric is the default.
            FormCase("bools numeric", ["t": true, "f": false], expected: "f=0&t=1"),
            // Computed from source: BoolEncoding.literal.
            FormCase(
                "bools literal",
                ["t": true, "f": false],
                URLEncodedFormEncoder(boolEncoding: .literal),
                expected: "f=false&t=true"
            ),
            // Computed from source: literal bools in an array, insertion order.
            FormCase(
                "literal bools in an array",
                ["flags": [true, false, true]],
                URLEncodedFormEncoder(boolEncoding: .literal, alphabetizeKeyValuePairs: false),
                expected: "flags%5B%5D=true&flags%5B%5D=false&flags%5B%5D=true"
            ),
            // Computed from source: mixed scalars in one array; numeric true is "1" and sorts with the int 1.
            FormCase("mixed scalar array", ["a": [1, "x", true]], expected: "a%5B%5D=1&a%5B%5D=1&a%5B%5D=x"),
            // Computed from source: "-" is unreserved, so negatives are not escaped.
            FormCase("negative numbers", ["i": -42, "d": -0.5], expected: "d=-0.5&i=-42"),
            // Computed from source: Int bounds via `String(value)`.
            FormCase(
                "int bounds",
                ["max": .int(.max), "min": .int(.min)],
                expected: "max=9223372036854775807&min=-9223372036854775808"
            ),
            // Computed from source: `String(Double)` switches to exponent form ("1e+20", "1e-05"), and the "+"
            // of the exponent is then escaped to %2B.
            FormCase(
                "doubles print like Swift's description",
                ["a": 1.5, "b": 0.1, "c": 1e20, "d": 0.00001],
                expected: "a=1.5&b=0.1&c=1e%2B20&d=1e-05"
            ),
        ]

        // MARK: Computed from source: escaping and spaces

        static let computedEscaping: [FormCase] = [
            // Computed from source: with .plusReplaced a literal "+" is escaped to %2B before spaces become "+".
            FormCase(
                "plusReplaced escapes a literal plus",
                ["q": "a+b c"],
                URLEncodedFormEncoder(spaceEncoding: .plusReplaced),
                expected: "q=a%2Bb+c"
            ),
            // Computed from source: the same input with the default .percentEscaped.
            FormCase("percentEscaped with a literal plus", ["q": "a+b c"], expected: "q=a%2Bb%20c"),
            // Computed from source: .plusReplaced applies to keys as well as values.
            FormCase(
                "plusReplaced in keys",
                ["first name": "John Smith"],
                URLEncodedFormEncoder(spaceEncoding: .plusReplaced),
                expected: "first+name=John+Smith"
            ),
            // Computed from source: a formatted date string with .plusReplaced.
            FormCase(
                "date string with plusReplaced",
                ["date": "2001-01-01 00:02:03.4560"],
                URLEncodedFormEncoder(spaceEncoding: .plusReplaced),
                expected: "date=2001-01-01+00%3A02%3A03.4560"
            ),
            // Computed from source: RFC 3986 unreserved "-._~" pass through in keys and values.
            FormCase("unreserved punctuation passes through", ["k-._~": "v-._~"], expected: "k-._~=v-._~"),
            // Computed from source: control characters are percent-escaped as UTF-8 bytes.
            FormCase("tab and newline", ["t": "a\tb\nc"], expected: "t=a%09b%0Ac"),
            // Computed from source: emoji key and value (U+1F600 = F0 9F 98 80, U+1F389 = F0 9F 8E 89).
            FormCase("emoji key and value", ["😀": "🎉"], expected: "%F0%9F%98%80=%F0%9F%8E%89"),
        ]
}
