// swift-tools-version:6.2
import PackageDescription

/// The fetchctl executable's release link on Linux: the Swift runtime and Foundation from the toolchain's
/// static SDK instead of its shared libraries. Loaded from shared libraries, the runtime costs each start
/// ~11,000 symbol lookups, and every retain, release and thread-local read goes through an indirect call:
/// together 12% of a 2,000-job batch's time (BENCHMARKS.md). Foundation's archives need their ICU and
/// CoreFoundation archives, which only the static SDK's module maps name, so they are listed, as a group.
/// The shipped build (`--static-swift-stdlib`) links the same archives; repeating them there changes nothing.
let staticRuntime = ["-static-stdlib", "-Xlinker", "--start-group"]
    + ["Foundation", "FoundationEssentials", "FoundationInternationalization", "_FoundationICU",
       "CoreFoundation", "_FoundationCShims", "_FoundationCollections", "swiftSynchronization"]
        .flatMap { ["-Xlinker", "-l:lib\($0).a"] }
    + ["-Xlinker", "--end-group"]

let package = Package(
    name: "fetchctl",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "fetchctl", targets: ["fetchctl"]),
        .library(name: "FetchKit", targets: ["FetchKit", "FetchKitSchemas", "FetchKitURLRequest"]),
        .library(name: "FetchKitTesting", targets: ["FetchKitTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        // TLS: HTTP/2 for the test server, certificates for the test server's PKI and for saying why
        // a server's certificate was refused.
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        // Jobs from data files: RFC 4180 CSV read from a stream, a record at a time.
        .package(url: "https://github.com/yaslab/CSV.swift.git", from: "2.5.2"),
        // --metrics-file and --metrics-push: metrics through swift-metrics, in Prometheus's text format.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // zlib, for gzip/deflate response bodies (the system library SwiftNIO's compression also links).
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // The JSON Schemas as data: schemas/*.json embedded byte for byte (`fetchctl schema`).
        .target(
            name: "FetchKitSchemas",
            path: "schemas",
            exclude: ["generate.py"],
            sources: ["JSONSchemas.swift"],
            resources: [.embedInCode("routes.schema.json"), .embedInCode("jobs.schema.json")]
        ),
        // The Swift runtime's global-executor hook, by address (FetchKit's EventLoopExecutor).
        .target(name: "CExecutorHook"),
        // statfs's file system type (tmpfs or not), which Swift's Glibc module leaves out.
        .target(name: "CFileSystem"),
        // glibc's mallopt (the fetchctl binary's heap growth), which it leaves out too, and the binary's
        // zero-initialized data paged in at start.
        .target(name: "CMalloc"),
        // sqlite3_config (variadic, so not imported into Swift): SQLite's memory statistics off.
        .target(name: "CSQLiteConfig", linkerSettings: [.linkedLibrary("sqlite3")]),
        .target(
            name: "FetchKit",
            dependencies: [
                "CZlib",
                "CExecutorHook",
                "CFileSystem",
                "CSQLiteConfig",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API through GRDB's own module, for the batched job-result insert.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "CSV", package: "CSV.swift"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            // New stores' files, written into place instead of made with SQL (`StoreTemplate`).
            resources: [.embedInCode("Resources/state.sqlite"), .embedInCode("Resources/cache-index.sqlite")]
        ),
        .target(
            name: "FetchKitTesting",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // URLRequestConvertible and the Foundation URLRequest bridge: FoundationNetworking (and libcurl)
        // only for the programs that use them, not in the fetchctl binary.
        .target(name: "FetchKitURLRequest", dependencies: ["FetchKit"]),
        // The commands (ArgumentParser), apart from the executable so the tests import them without
        // the executable's release link settings.
        .target(
            name: "FetchctlCommands",
            dependencies: [
                "FetchKit",
                "FetchKitSchemas",
                "FetchKitTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "fetchctl",
            dependencies: ["CMalloc", "FetchKit", "FetchctlCommands"],
            linkerSettings: [
                // Export no symbols from the shipped binary: nothing links against it, and at every start
                // the dynamic loader and the runtime's dladdr calls walk ~38,000 exported Swift symbols
                // (about 2 ms of a 20 ms one-job run; BENCHMARKS.md).
                .unsafeFlags(["-Xlinker", "--no-export-dynamic"], .when(configuration: .release)),
                // Linked at a fixed address: a position-independent executable has its 137,000 pointers
                // to its own code and data rewritten by the loader at every start (about 1.3 ms of a
                // one-job run's CPU; docs/design.md, "The release build").
                .unsafeFlags(["-Xclang-linker", "-no-pie"], .when(platforms: [.linux], configuration: .release)),
                // The Swift runtime and Foundation linked in, as `--static-swift-stdlib` does for the shipped
                // build, so a plain `swift build -c release` makes the same kind of binary (below).
                .unsafeFlags(staticRuntime, .when(platforms: [.linux], configuration: .release)),
            ]
        ),
        // .ci/network-test.py: the test server on a network namespace's address, outside the test process.
        .executableTarget(name: "test-server", dependencies: ["FetchKitTesting"], path: "Sources/test-server"),
        // examples/library: FetchKit used from Swift, without YAML (`swift run library-example`).
        .executableTarget(name: "library-example", dependencies: ["FetchKit", "FetchKitURLRequest", "FetchKitTesting"], path: "examples/library"),
        // bench/cache.sh: the cost of one response-cache hit in a warm process.
        .executableTarget(name: "cache-hit", dependencies: ["FetchKit", "FetchKitTesting"], path: "bench/cache-hit"),
        // bench/compare.sh's floor: AsyncHTTPClient alone, without FetchKit.
        .executableTarget(name: "ahc-floor", dependencies: [.product(name: "AsyncHTTPClient", package: "async-http-client")],
                          path: "bench/ahc-floor"),
        .testTarget(name: "FetchKitTests", dependencies: ["FetchKit", "FetchKitURLRequest", "FetchKitTesting"]),
        .testTarget(name: "fetchctlTests", dependencies: ["FetchctlCommands", "CMalloc", "FetchKit", "FetchKitTesting",
                                                          .product(name: "Crypto", package: "swift-crypto")]),
    ],
    swiftLanguageModes: [.v6]
)

// The package's own Swift code: a nonisolated async function runs on its caller's executor (SE-0461)
// instead of hopping to the global executor at every call. With the event loops as the global
// executor, each of those hops was a trip through a loop's queue: 44 a job, and 19% of a job's
// instructions (BENCHMARKS.md). The test targets keep Swift 6's default, as most programs using
// FetchKit do: the tests call the library as such a program would.
for target in package.targets where target.type != .system && target.type != .test && !target.name.hasPrefix("C") {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]
}

// A plain `swift build -c release` compiles FetchKit and the fetchctl executable as the shipped build does
// (`--toolset toolsets/release.json`, which also reaches the dependencies): optimized with the release
// profile (bench/pgo.sh), without run-time exclusivity checks, and without the per-type metadata accessors
// the runtime would look up by mangled name at start. The profile's path is absolute, so the flags hold
// wherever the compiler runs; swift-tools-version 6.2 lets a package used as a dependency carry them.
// bench/pgo.sh's instrumented build (FETCHCTL_PGO_TRAINING=1) takes its options from its own toolset:
// a profile in use there would shape the counters it places.
let releaseProfile = Context.packageDirectory + "/toolsets/fetchctl.profdata"
for target in package.targets where ["FetchKit", "FetchctlCommands", "fetchctl"].contains(target.name)
    && Context.environment["FETCHCTL_PGO_TRAINING"] == nil {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .unsafeFlags([
            "-enforce-exclusivity=unchecked",
            "-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors",
            "-Xfrontend", "-ir-profile-use=" + releaseProfile, "-Xllvm", "-no-pgo-warn-mismatch",
        ], .when(configuration: .release)),
    ]
}
