/// An ordered list of HTTP headers whose names compare case-insensitively, after Alamofire's `HTTPHeaders`.
public struct HTTPHeaders: Sendable, Equatable, Sequence {
    public struct Header: Sendable, Equatable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    private var headers: [Header] = []

    public init() {}

    public init(_ pairs: [(String, String)]) {
        for (name, value) in pairs { update(name: name, value: value) }
    }

    /// Sets `name` to `value`, replacing an existing header of that name in place.
    public mutating func update(name: String, value: String) {
        if let index = headers.firstIndex(where: { Self.sameName($0.name, name) }) {
            headers[index].value = value
        } else {
            headers.append(Header(name: name, value: value))
        }
    }

    /// Appends a header even when one of that name exists (responses may repeat `Set-Cookie`).
    public mutating func add(name: String, value: String) {
        headers.append(Header(name: name, value: value))
    }

    public mutating func reserveCapacity(_ count: Int) {
        headers.reserveCapacity(count)
    }

    public mutating func remove(name: String) {
        headers.removeAll { Self.sameName($0.name, name) }
    }

    public func value(for name: String) -> String? {
        headers.withUnsafeBufferPointer { fields in
            for index in fields.indices where Self.sameName(fields[index].name, name) { return fields[index].value }
            return nil
        }
    }

    /// Every value of `name`, in order (a response may send `Link` in several fields).
    public func values(for name: String) -> [String] {
        var values: [String] = []
        forEachField { field, value in
            if Self.sameName(field, name) { values.append(value) }
        }
        return values
    }

    /// Whether a field named `name` is present.
    func contains(name: String) -> Bool {
        value(for: name) != nil
    }

    /// Calls `body` with every field's name and value, in order, read in place. Iterating the
    /// headers copies each field out (a retain and a release of both of its strings, atomic
    /// operations): the response cache looks at every field of every response several times.
    func forEachField(_ body: (_ name: String, _ value: String) throws -> Void) rethrows {
        try headers.withUnsafeBufferPointer { fields in
            for index in fields.indices { try body(fields[index].name, fields[index].value) }
        }
    }

    public subscript(name: String) -> String? {
        get { value(for: name) }
        set { if let newValue { update(name: name, value: newValue) } else { remove(name: name) } }
    }

    /// Header names compare without regard to ASCII case (RFC 9110 §5.1), with no allocation.
    static func sameName(_ a: String, _ b: String) -> Bool {
        UTF8Text.equalsIgnoringASCIICase(a, b)
    }

    public var isEmpty: Bool { headers.isEmpty }
    public var count: Int { headers.count }

    public func makeIterator() -> IndexingIterator<[Header]> { headers.makeIterator() }
}
