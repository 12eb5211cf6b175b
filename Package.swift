// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "fetchctl",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "fetchctl", targets: ["fetchctl"]),
        .library(name: "FetchKit", targets: ["FetchKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
    ],
    targets: [
        .target(
            name: "FetchKit",
            dependencies: [
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "fetchctl",
            dependencies: [
                "FetchKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "FetchKitTests", dependencies: ["FetchKit"]),
        .testTarget(name: "fetchctlTests", dependencies: ["fetchctl", "FetchKit"]),
    ],
    swiftLanguageModes: [.v6]
)
