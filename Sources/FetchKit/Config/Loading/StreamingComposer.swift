import CYaml
import Foundation
import Yams

/// Composes one YAML document into Yams nodes as `Yams.compose` does, except that the items of the
/// top-level `jobs:` list are handed to a closure one at a time and then dropped.
///
/// Why: Yams composes the whole file into one tree first, about 1.3 KB of nodes for a one-line job,
/// so a jobs file of 100,000 jobs needed some 130 MB before the first job was read. Read item by item,
/// the tree never holds more than one job. This reads libyaml's events (the parser Yams itself
/// wraps) and builds the same nodes, tags, styles and marks Yams would.
///
/// Any error (YAML syntax, an undefined alias, a duplicate key, more than one document) makes
/// `compose` return nil; the caller then composes the file with Yams, whose error it reports, so
/// messages are the same as before.
final class StreamingComposer {
    private let text: String
    private let resolver: Resolver
    /// Made once: Yams's `Constructor.default` builds a new constructor (and its tables) at every
    /// use, 9,500 instructions a scalar (callgrind).
    private let constructor = Constructor.default
    private var parser = yaml_parser_t()
    private var anchors: [Anchor: Node] = [:]
    private var failed = false

    /// Thrown inside to unwind; never escapes.
    private struct Failure: Error {}

    init(text: String, resolver: Resolver) {
        self.text = text
        self.resolver = resolver
    }

    /// The document's root, with an empty `jobs:` list when its items went to `onJob` (then
    /// `streamed` is true); nil for an empty document. nil overall on any error.
    ///
    /// `onTopLevel` gets each of the root mapping's other values as soon as it is composed, with its
    /// key: a jobs file's `settings:` (written before its `jobs:`) is known before its jobs are read.
    func compose(onJob: (Node) -> Void, onTopLevel: (String, Node) -> Void = { _, _ in }) -> (root: Node?, streamed: Bool)? {
        if text.utf8.isEmpty { return (nil, false) }
        var text = text
        text.makeContiguousUTF8()
        return text.utf8.withContiguousStorageIfAvailable { buffer -> (root: Node?, streamed: Bool)? in
            yaml_parser_initialize(&parser)
            defer { yaml_parser_delete(&parser) }
            yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            do {
                _ = try next()  // stream start
                let first = try next()
                if first.type == YAML_STREAM_END_EVENT { return (nil, false) }
                // first is the document start
                var streamed = false
                let root = try node(from: next(), depth: 0, onJob: onJob, onTopLevel: onTopLevel, streamed: &streamed)
                _ = try next()  // document end
                guard try next().type == YAML_STREAM_END_EVENT else { return nil }  // a second document
                return (root, streamed)
            } catch {
                return nil
            }
        } ?? nil
    }

    private func next() throws -> Event {
        let event = Event()
        guard yaml_parser_parse(&parser, &event.event) == 1 else { throw Failure() }
        return event
    }

    private func tag(_ name: String?) -> Tag {
        Tag(name.map(Tag.Name.init(rawValue:)) ?? .implicit, resolver, constructor)
    }

    private func register(_ anchor: Anchor?, _ node: Node) {
        if let anchor { anchors[anchor] = node }
    }

    private func node(from event: Event, depth: Int, onJob: (Node) -> Void, onTopLevel: (String, Node) -> Void = { _, _ in },
                      streamed: inout Bool) throws -> Node {
        switch event.type {
        case YAML_ALIAS_EVENT:
            guard let name = event.string(event.event.data.alias.anchor), let node = anchors[Anchor(rawValue: name)] else { throw Failure() }
            return node
        case YAML_SCALAR_EVENT:
            let scalar = event.event.data.scalar
            let anchor = event.string(scalar.anchor).map(Anchor.init(rawValue:))
            let value = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
            let tagName = scalar.quoted_implicit == 1 ? Tag.Name.str.rawValue : event.string(scalar.tag)
            let style = Node.Scalar.Style(rawValue: numericCast(scalar.style.rawValue)) ?? .any
            let node = Node.scalar(.init(value, tag(tagName), style, event.mark, anchor))
            register(anchor, node)
            return node
        case YAML_SEQUENCE_START_EVENT:
            let start = event.event.data.sequence_start
            var items: [Node] = []
            var item = try next()
            while item.type != YAML_SEQUENCE_END_EVENT {
                items.append(try node(from: item, depth: depth + 1, onJob: onJob, streamed: &streamed))
                item = try next()
            }
            let anchor = event.string(start.anchor).map(Anchor.init(rawValue:))
            let node = Node.sequence(.init(items, tag(start.implicit != 0 ? nil : event.string(start.tag)), item.collectionStyle() ?? .any, event.mark, anchor))
            register(anchor, node)
            return node
        case YAML_MAPPING_START_EVENT:
            let start = event.event.data.mapping_start
            var pairs: [(Node, Node)] = []
            var keyEvent = try next()
            while keyEvent.type != YAML_MAPPING_END_EVENT {
                let key = try node(from: keyEvent, depth: depth + 1, onJob: onJob, streamed: &streamed)
                let valueEvent = try next()
                let value: Node
                if depth == 0, key.scalar?.string == "jobs", valueEvent.type == YAML_SEQUENCE_START_EVENT,
                   valueEvent.event.data.sequence_start.anchor == nil, !streamed {
                    value = try streamJobs(valueEvent, onJob: onJob)
                    streamed = true
                } else {
                    value = try node(from: valueEvent, depth: depth + 1, onJob: onJob, streamed: &streamed)
                    if depth == 0, let name = key.scalar?.string { onTopLevel(name, value) }
                }
                pairs.append((key, value))
                keyEvent = try next()
            }
            // Yams refuses a mapping with a key written twice; so does this (the caller reports it).
            var keys = Set<Node>()
            for (key, _) in pairs where !keys.insert(key).inserted { throw Failure() }
            let anchor = event.string(start.anchor).map(Anchor.init(rawValue:))
            let node = Node.mapping(.init(pairs, tag(start.implicit != 0 ? nil : event.string(start.tag)), keyEvent.collectionStyle() ?? .any, event.mark, anchor))
            register(anchor, node)
            return node
        default:
            throw Failure()
        }
    }

    /// The top-level `jobs:` list: each item goes to `onJob` as soon as it is composed.
    private func streamJobs(_ start: Event, onJob: (Node) -> Void) throws -> Node {
        var item = try next()
        var ignored = false
        while item.type != YAML_SEQUENCE_END_EVENT {
            onJob(try node(from: item, depth: 2, onJob: onJob, streamed: &ignored))
            item = try next()
        }
        let data = start.event.data.sequence_start
        return Node.sequence(.init([], tag(data.implicit != 0 ? nil : start.string(data.tag)), item.collectionStyle() ?? .any, start.mark, nil))
    }

    /// Yams's `Mark` has no public initializer; it is two `Int`s (line, column), and this builds one
    /// from the same two. `StreamingComposerTests` compares every mark with Yams's own, so a Yams
    /// that changed the layout would fail there, not misplace diagnostics quietly.
    private struct MarkLayout {
        let line: Int
        let column: Int
    }

    static func mark(line: Int, column: Int) -> Mark {
        precondition(MemoryLayout<Mark>.size == MemoryLayout<MarkLayout>.size)
        return unsafeBitCast(MarkLayout(line: line, column: column), to: Mark.self)
    }

    /// One libyaml event, freed when dropped.
    private final class Event {
        var event = yaml_event_t()
        deinit { yaml_event_delete(&event) }

        var type: yaml_event_type_t { event.type }
        var mark: Mark { StreamingComposer.mark(line: event.start_mark.line + 1, column: event.start_mark.column + 1) }

        /// A collection's style as Yams records it: read from its end event, whose data holds none,
        /// so always `.any`. Kept the same so both composers give equal nodes.
        func collectionStyle<Style: RawRepresentable>() -> Style? where Style.RawValue == UInt32 {
            Style(rawValue: numericCast(event.data.sequence_start.style.rawValue))
        }

        func string(_ pointer: UnsafePointer<UInt8>?) -> String? {
            pointer.flatMap { String.decodeCString($0, as: UTF8.self, repairingInvalidCodeUnits: true)?.result }
        }
    }
}
