import Foundation
import NIOCore
import NIOPosix

/// `fetchctl run JOBS …` begun before its command line is parsed: the jobs file loads (and its
/// existing state directory opens, and the network monitor starts) on another core while
/// ArgumentParser works out the options.
///
/// Parsing `run`'s command line takes about 3 ms of the main thread, most of it the Swift runtime
/// meeting ArgumentParser's types for the first time; loading a 2,000-job matrix took about as
/// long again, after it. Side by side (with the stores opening and the monitor starting on the same
/// two cores), the first request of a 2,000 × 16 KiB batch left about 1.5 ms earlier (BENCHMARKS.md).
///
/// The prefetch is a guess, made from the raw arguments without interpreting any option: a
/// command line of the shape `fetchctl run FILE [options]` whose options are none of those that
/// change what is loaded or where the state lives (`--dry-run`, `--state-dir`, `--shard`), or that
/// end the process before a run (`--help`, `--version`, …). The run takes the prefetch only if
/// it is what the parsed options ask for (`RunInvocation.prefetch`: the same jobs file, mode,
/// environment and state directory); otherwise it waits for it to finish, lets its lock and stores
/// go, and loads as before. Loading reads files and nothing else, and the state directory is opened
/// early only when it exists already, as `fetchctl run` always has (`StateOpening`), so a wrong
/// guess changes nothing on disk.
public final class RunPrefetch: Sendable {
    /// The jobs file as it was given on the command line.
    public let jobsFile: String
    let environment: [String: String]
    let loaded: EventLoopFuture<LoadedConfig>
    /// The state directory's opening, started once the jobs file's settings were read.
    let early: LockedBox<StateOpening?>
    /// The network monitor, started unless the command line says `--offline`.
    let monitor: NetworkMonitorStart
    /// The run's transport, made once the settings are read, with the first job's connection
    /// opening while the rest loads; nil with `--offline`.
    let transport: EarlyTransport?
    let startsMonitor: Bool
    private let state = LockedBox(Use.pending)

    /// What became of a prefetch (`RunPrefetchTests` check it).
    public enum Use: Sendable, Equatable {
        case pending
        /// The run used what it loaded.
        case taken
        /// The run asked for something else, and loaded it itself.
        case discarded
    }

    public var use: Use { state.withLock { $0 } }

    /// The options after which the guess is not made: they change what is loaded (`--dry-run`
    /// loads for a plan, keeping unset variables visible) or where the state lives, or they end
    /// the process before any run.
    static let optionsThatChangeTheRun: Set<String> = [
        "--dry-run", "--state-dir", "--shard", "--help", "-h", "--version",
        "--experimental-dump-help", "--generate-completion-script",
    ]

    /// The jobs file of a command line of the shape `fetchctl run FILE [options]`, unless one of
    /// `optionsThatChangeTheRun` appears (as `--opt` or `--opt=value`). Nothing else is read
    /// from the arguments: ArgumentParser still parses all of them.
    static func guessJobsFile(_ arguments: [String]) -> String? {
        guard arguments.count >= 3, arguments[1] == "run", !arguments[2].hasPrefix("-"), !arguments[2].isEmpty else { return nil }
        for argument in arguments.dropFirst(3) {
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            if optionsThatChangeTheRun.contains(name) || argument == "--" { return nil }
        }
        return arguments[2]
    }

    /// Starts loading the jobs file `arguments` name, if they have the shape `guessJobsFile`
    /// accepts; nil otherwise. Call it before parsing the command line.
    public static func begin(arguments: [String] = CommandLine.arguments,
                             environment: [String: String] = ProcessEnvironment.variables()) -> RunPrefetch? {
        guard let jobsFile = guessJobsFile(arguments) else { return nil }
        let offline = arguments.contains("--offline")
        return RunPrefetch(jobsFile: jobsFile, environment: environment, startsMonitor: !offline)
    }

    init(jobsFile: String, environment: [String: String], startsMonitor: Bool) {
        self.jobsFile = jobsFile
        self.environment = environment
        self.startsMonitor = startsMonitor
        // The load first (its thread starts before the event loops are made, though its result is
        // a future on one), then the network monitor: starting the monitor makes NIO's thread pool
        // (0.3–0.5 ms), which the load, the run's longest path to its first request, need not wait for.
        let early = LockedBox<StateOpening?>(nil)
        self.early = early
        let transport = startsMonitor ? EarlyTransport() : nil
        self.transport = transport
        var loader = ConfigLoader(environment: environment, mode: .run)
        // Without --state-dir and --shard (see `optionsThatChangeTheRun`) the state directory is
        // the settings' own, as `RunInvocation.stateDirectory` would make it.
        loader.onJobsFileSettings = { settings in
            let stateDirectory = settings.stateDir
            early.withLock {
                $0 = StateOpening.early(stateDirectory: stateDirectory,
                                        cacheDirectory: RunInvocation.cacheDirectory(settings, stateDirectory: stateDirectory))
            }
            transport?.settingsRead(settings, environment: environment)
        }
        if let transport { loader.onFirstJob = { transport.firstJobMade($0) } }
        let configured = loader
        loaded = RunInvocation.onAnotherThread { configured.load([jobsFile]) }
        monitor = NetworkMonitorStart(startsMonitor ? NetworkMonitor.begin(on: MultiThreadedEventLoopGroup.singleton.loopOtherThanCurrent()) : nil)
    }

    /// The loaded config and the early opening, for a run that matches; marks the prefetch taken.
    /// The early transport stays here: the run takes it (`EarlyTransport.take`) if it gets that
    /// far, and `perform` shuts it down otherwise.
    func take() async -> (config: LoadedConfig, early: StateOpening?) {
        let config = await Self.wait(for: loaded)
        state.withLock { $0 = .taken }
        return (config, early.withLock { $0 })
    }

    /// For a run that asked for something else: waits until the load (and the state directory's
    /// opening it may have started) is done, then lets go of the lock, the stores and the network
    /// monitor, so that the run can take them itself.
    func discard() async {
        _ = await Self.wait(for: loaded)
        let opening = early.withLock { value in
            defer { value = nil }
            return value
        }
        if let opening {
            _ = try? await opening.store?.get()
            _ = try? await opening.cache?.get()
        }
        monitor.discardUnlessTaken()
        await transport?.discardUnlessTaken()
        state.withLock { $0 = .discarded }
    }

    private static func wait(for future: EventLoopFuture<LoadedConfig>) async -> LoadedConfig {
        // The load never fails: problems are diagnostics in the config.
        do { return try await future.get() } catch { return LoadedConfig() }
    }
}
