import Foundation

/// Encodes a `ParameterValue` object as `application/x-www-form-urlencoded` text, with Alamofire's
/// `URLEncodedFormEncoder` defaults and escaping, so a route written for Alamofire encodes the same here.
///
/// - Null values drop their key (Alamofire's `NilEncoding.dropKey`); empty arrays and objects emit nothing.
/// - With `alphabetizeKeyValuePairs` (the default) the encoded `key=value` segments are sorted at every
///   nesting level, exactly as Alamofire's serializer sorts them.
/// - Keys and values are escaped with RFC 3986 query characters less `:#[]@!$&'()*+,;=`.
public struct URLEncodedFormEncoder: Sendable, Equatable {
    /// How array elements are keyed: `key[]`, `key`, or `key[0]`.
    public enum ArrayEncoding: String, Sendable, Equatable, CaseIterable {
        case brackets
        case noBrackets = "no_brackets"
        case indexInBrackets = "index_in_brackets"
    }

    /// How booleans are written: `1`/`0`, or `true`/`false`.
    public enum BoolEncoding: String, Sendable, Equatable, CaseIterable {
        case numeric, literal
    }

    /// How spaces are written: `%20`, or `+` (a literal `+` is then escaped as `%2B`).
    public enum SpaceEncoding: String, Sendable, Equatable, CaseIterable {
        case percentEscaped = "percent"
        case plusReplaced = "plus"
    }

    /// How nested object keys are written: `parent[child]` or `parent.child`.
    public enum KeyPathEncoding: String, Sendable, Equatable, CaseIterable {
        case brackets, dots
    }

    /// The encoder's failure: the top-level value was not an object.
    public struct InvalidRootError: Error, Sendable, CustomStringConvertible {
        public let kind: String
        public var description: String { "URL-encoded parameters must be an object, not \(kind)" }
    }

    public var arrayEncoding: ArrayEncoding
    public var boolEncoding: BoolEncoding
    public var spaceEncoding: SpaceEncoding
    public var keyPathEncoding: KeyPathEncoding
    public var alphabetizeKeyValuePairs: Bool

    public init(
        arrayEncoding: ArrayEncoding = .brackets,
        boolEncoding: BoolEncoding = .numeric,
        spaceEncoding: SpaceEncoding = .percentEscaped,
        keyPathEncoding: KeyPathEncoding = .brackets,
        alphabetizeKeyValuePairs: Bool = true
    ) {
        self.arrayEncoding = arrayEncoding
        self.boolEncoding = boolEncoding
        self.spaceEncoding = spaceEncoding
        self.keyPathEncoding = keyPathEncoding
        self.alphabetizeKeyValuePairs = alphabetizeKeyValuePairs
    }

    /// Encodes an object as `key=value&…`. Throws `InvalidRootError` for anything but an object.
    public func encode(_ value: ParameterValue) throws -> String {
        guard case .object(let entries) = value else { throw InvalidRootError(kind: value.kindDescription) }
        var segments: [String] = []
        for entry in entries {
            guard let component = Component(entry.value, boolEncoding: boolEncoding) else { continue }
            segments.append(serialize(component, forKey: entry.key))
        }
        return join(segments)
    }

    // MARK: - Serialization, after Alamofire's URLEncodedFormSerializer

    /// The encoder's intermediate tree: null and empty containers are already gone.
    private indirect enum Component {
        case string(String)
        case array([Component])
        case object([(String, Component)])

        init?(_ value: ParameterValue, boolEncoding: BoolEncoding) {
            switch value {
            case .null:
                return nil
            case .bool(let b):
                self = .string(boolEncoding == .numeric ? (b ? "1" : "0") : (b ? "true" : "false"))
            case .int(let i):
                self = .string(String(i))
            case .double(let d):
                self = .string(String(d))
            case .string(let s):
                self = .string(s)
            case .array(let items):
                let children = items.compactMap { Component($0, boolEncoding: boolEncoding) }
                if children.isEmpty { return nil }
                self = .array(children)
            case .object(let entries):
                let children = entries.compactMap { entry in
                    Component(entry.value, boolEncoding: boolEncoding).map { (entry.key, $0) }
                }
                if children.isEmpty { return nil }
                self = .object(children)
            }
        }
    }

    private func serialize(_ component: Component, forKey key: String) -> String {
        switch component {
        case .string(let string):
            return "\(escape(key))=\(escape(string))"
        case .array(let items):
            return join(items.enumerated().map { index, item in
                let itemKey: String
                switch arrayEncoding {
                case .brackets: itemKey = "\(key)[]"
                case .noBrackets: itemKey = key
                case .indexInBrackets: itemKey = "\(key)[\(index)]"
                }
                return serialize(item, forKey: itemKey)
            })
        case .object(let entries):
            return join(entries.map { subKey, value in
                let path = keyPathEncoding == .brackets ? "[\(subKey)]" : ".\(subKey)"
                return serialize(value, forKey: key + path)
            })
        }
    }

    private func join(_ segments: [String]) -> String {
        (alphabetizeKeyValuePairs ? segments.sorted() : segments).joined(separator: "&")
    }

    /// Percent-escapes with Alamofire's allowed set, then applies the space encoding.
    func escape(_ string: String) -> String {
        let escaped = string.addingPercentEncoding(withAllowedCharacters: Self.allowedWithSpace) ?? string
        return escaped.replacingOccurrences(of: " ", with: spaceEncoding == .percentEscaped ? "%20" : "+")
    }

    /// RFC 3986 query characters less `:#[]@!$&'()*+,;=` (Alamofire's `.afURLQueryAllowed`), plus space,
    /// which `escape` replaces afterwards.
    static let allowedWithSpace: CharacterSet = {
        var set = CharacterSet.urlQueryAllowed.subtracting(CharacterSet(charactersIn: ":#[]@!$&'()*+,;="))
        set.insert(" ")
        return set
    }()
}
