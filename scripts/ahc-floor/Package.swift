// swift-tools-version:6.0
// scripts/ahc-floor — many small files with AsyncHTTPClient and nothing else (see main.swift).
import PackageDescription

let package = Package(
    name: "ahc-floor",
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        .executableTarget(
            name: "ahc-floor",
            dependencies: [.product(name: "AsyncHTTPClient", package: "async-http-client")]
        ),
    ]
)
