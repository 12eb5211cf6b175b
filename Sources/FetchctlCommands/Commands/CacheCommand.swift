import ArgumentParser
import FetchKit
import Foundation

/// Every command names itself (`commandName`): ArgumentParser otherwise derives the name from the
/// type's with `String(describing:)` for every command in the tree on every start, and each such call
/// makes the Swift runtime scan the binary's conformance records (about a millisecond a run in all).
struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Inspect and maintain the response cache.",
        discussion: """
        The cache is --cache-dir, else the jobs file's settings.cache.dir, else cache/ in the state
        directory (--state-dir, else settings.state_dir, else ./.fetchctl). stats and list only read
        and work while a run is going; clear and prune change the cache and exit 75 while a run holds
        the state directory.

        Examples:
          fetchctl cache stats jobs.yaml
          fetchctl cache list jobs.yaml --url-prefix https://api.github.com/repos/
          fetchctl cache prune jobs.yaml --max-size 200MB --older-than 30d
          fetchctl cache clear --state-dir /var/lib/fetchctl
        """,
        subcommands: [Stats.self, List.self, Clear.self, Prune.self]
    )

    /// Where to find the cache, shared by the subcommands.
    struct Location: ParsableArguments {
        @Argument(help: "A jobs file, to find its state directory and settings.cache.dir.")
        var jobsFile: String?

        @Option(help: "The state directory.")
        var stateDir: String?

        @Option(help: "The cache directory (overrides the state directory's cache/).")
        var cacheDir: String?

        /// The state directory (for the lock) and the cache directory.
        func resolve() throws -> (state: String, cache: String) {
            var state = stateDir ?? ".fetchctl"
            var settingsCacheDir: String?
            if let jobsFile {
                let config = ConfigLoader(mode: .validate).load([jobsFile])
                if config.hasErrors {
                    Output.diagnostics(of: config)
                    throw ExitCode(ExitStatus.invalidConfig.rawValue)
                }
                if stateDir == nil { state = config.jobsFile?.settings.stateDir ?? state }
                settingsCacheDir = config.jobsFile?.settings.cacheDir
            }
            let cache = cacheDir ?? settingsCacheDir ?? (state as NSString).appendingPathComponent("cache")
            return (state, URL(fileURLWithPath: cache).standardizedFileURL.path)
        }

        func openReadOnly() throws -> SQLiteResponseCache? {
            let (_, cache) = try resolve()
            guard FileManager.default.fileExists(atPath: (cache as NSString).appendingPathComponent("index.sqlite")) else {
                Output.stderr("no response cache in \(cache) yet\n")
                return nil
            }
            return try SQLiteResponseCache(directory: cache, readOnly: true)
        }

        /// Takes the state directory's lock (exit 75 when a run holds it) and opens the cache to change it.
        func openForWriting() throws -> (SQLiteResponseCache, RunLock)? {
            let (state, cache) = try resolve()
            guard FileManager.default.fileExists(atPath: (cache as NSString).appendingPathComponent("index.sqlite")) else {
                Output.stderr("no response cache in \(cache) yet\n")
                return nil
            }
            let lock: RunLock
            do {
                lock = try RunLock(directory: state)
            } catch let held as RunLock.Held {
                Output.stderr("error: \(held)\n")
                throw ExitCode(ExitStatus.locked.rawValue)
            }
            let store = try SQLiteResponseCache(directory: cache, onProblem: { Output.stderr("warning: \($0)\n") })
            return (store, lock)
        }
    }

    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json }

    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "stats", abstract: "Entries, bytes, the oldest entry and the last run's hit ratio.")

        @OptionGroup var location: Location
        @Option(help: "Output format: text or json.") var format: Format = .text

        func run() async throws {
            guard let cache = try location.openReadOnly() else { return }
            Output.stdout(CacheReport.stats(try await cache.statistics(), directory: cache.directory, json: format == .json))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "Stored responses, most recently used first (URLs redacted).")

        @OptionGroup var location: Location
        @Option(help: "Only entries whose URL starts with this.") var urlPrefix: String?
        @Option(help: "Output format: text or json.") var format: Format = .text

        func run() async throws {
            guard let cache = try location.openReadOnly() else { return }
            Output.stdout(CacheReport.list(try await cache.list(urlPrefix: urlPrefix), json: format == .json))
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "clear", abstract: "Remove every stored response.")

        @OptionGroup var location: Location

        func run() async throws {
            guard let (cache, lock) = try location.openForWriting() else { return }
            let result = try await cache.clear()
            withExtendedLifetime(lock) {}
            Output.stderr("removed \(result.entries) entr\(result.entries == 1 ? "y" : "ies") (\(CacheReport.bytes(result.bytes)))\n")
        }
    }

    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "prune",
            abstract: "Remove least recently used entries down to a size, entries unused for a while, and orphan files.")

        @OptionGroup var location: Location
        @Option(help: ArgumentHelp("Keep at most this much (e.g. 500MB); default settings.cache.max_size.", valueName: "size"))
        var maxSize: String?
        @Option(help: ArgumentHelp("Remove entries not used for this long (e.g. 30d, 12h).", valueName: "duration"))
        var olderThan: String?

        func validate() throws {
            if let maxSize, SizeGrammar.parse(maxSize) == nil { throw ValidationError("invalid size '\(maxSize)' (e.g. 500MB, 1GiB)") }
            if let olderThan, DurationGrammar.parse(olderThan) == nil { throw ValidationError("invalid duration '\(olderThan)' (e.g. 30d, 12h)") }
        }

        func run() async throws {
            var limit = maxSize.flatMap(SizeGrammar.parse)
            if limit == nil, let jobsFile = location.jobsFile {
                limit = ConfigLoader(mode: .validate).load([jobsFile]).jobsFile?.settings.cacheMaxSize
            }
            guard let (cache, lock) = try location.openForWriting() else { return }
            let result = await cache.prune(maxSize: limit, olderThan: olderThan.flatMap(DurationGrammar.parse).map { TimeInterval($0.components.seconds) }, sweep: true)
            withExtendedLifetime(lock) {}
            Output.stderr("removed \(result.entries) entr\(result.entries == 1 ? "y" : "ies") (\(CacheReport.bytes(result.bytes)))"
                          + (result.orphans > 0 ? " and \(result.orphans) orphan file\(result.orphans == 1 ? "" : "s")" : "") + "\n")
        }
    }
}
