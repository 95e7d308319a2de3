// swift-tools-version:6.0
import PackageDescription

#if canImport(Glibc)
import Glibc

/// Whether this machine's glibc reads packed relative relocations (DT_RELR, glibc 2.36): an older
/// one refuses to start a binary that has them.
let glibcReadsPackedRelocations: Bool = {
    var text = [CChar](repeating: 0, count: 64)
    guard confstr(Int32(_CS_GNU_LIBC_VERSION), &text, text.count) > 0 else { return false }
    // "glibc 2.36"
    let version = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let numbers = version.split(separator: " ").last?.split(separator: ".").compactMap { Int($0) } ?? []
    return numbers.count >= 2 && (numbers[0], numbers[1]) >= (2, 36)
}()
#else
let glibcReadsPackedRelocations = false
#endif

/// Linker flags for a release binary that carries the Swift runtime and Foundation in itself (as
/// `swift build --static-swift-stdlib` does, for the README's `swift run -c release`): `--version` in
/// 5.5 ms instead of 8.7, resolving no Swift library at load time. Objects compiled against the
/// shared Foundation name only `Foundation`, so the static archives it needs are named here (for
/// this toolchain's `usr/lib/swift_static`), in one group. No FoundationXML: it would load libxml2
/// (and libicuuc, liblzma) at every start (`XMLReader` reads Metalink files).
///
/// `--no-export-dynamic`: SwiftPM exports every symbol of an executable (45,000 here), and the Swift
/// runtime's start-up `dladdr` scans them all; no one links against `swoop`. Start-up 0.85 ms less
/// (`--version` 5.66 → 5.02 ms). The binary stays position-independent (`-no-pie` would save 1.2 ms
/// more, at the cost of address-space randomization for a program that parses what servers send).
///
/// Memory: lld (the toolchain's) instead of gold, for two things gold lacks. Packed relative
/// relocations (`-z pack-relative-relocs`, where glibc is 2.36 or later): the loader reads 27 KiB of
/// them instead of 3.3 MiB. And `linker/swoop.order` (made by `scripts/make-order.py`): the functions
/// common commands run, laid out together, for the kernel maps 64 KiB around each page fault, and
/// scattered code kept 21 MiB of the binary resident for a 1 KiB `get`. Peak RSS of that `get`
/// 34 → 25 MiB.
let staticArchives = [
    "FoundationNetworking", "Foundation", "FoundationInternationalization", "FoundationEssentials", "_FoundationICU",
    "_FoundationCShims", "_FoundationCollections", "CoreFoundation", "_CFURLSessionInterface",
]
let packedRelocations: [String] = glibcReadsPackedRelocations ? ["-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"] : []
let functionOrder: [String] = [
    "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/linker/swoop.order", "-Xlinker", "--no-warn-symbol-ordering",
]
/// The C++ runtime (libstdc++, which the Swift runtime and Foundation's ICU use) from its static
/// archive, where the machine has one (Debian's and Ubuntu's `libstdc++-N-dev`, which `-lstdc++` needs
/// anyway; Fedora's `libstdc++-static`): the shared library's relocated tables and the pages around
/// the few functions used were about 0.9 MiB of every run's resident memory (1 GiB `get` onto disk,
/// median of 5 with the binaries paged in by demand: 23.6 → 22.7 MiB; `--version` 14.7 → 13.9). The driver names `-lstdc++` itself; lld looks in `-L` directories in
/// order and finds `linker/static-libstdc++/libstdc++.so` first, a linker script naming the archive.
let staticLibstdcxx: [String] = {
    #if canImport(Glibc)
    var found = glob_t()
    defer { globfree(&found) }
    guard glob("/usr/lib/gcc/*/*/libstdc++.a", 0, nil, &found) == 0, found.gl_pathc > 0 else { return [] }
    return ["-L", "\(Context.packageDirectory)/linker/static-libstdc++"]
    #else
    return []
    #endif
}()
let staticRuntime: [String] = staticLibstdcxx + ["-static-stdlib", "-Xlinker", "--start-group"]
    + staticArchives.flatMap { ["-Xlinker", "-l\($0)"] }
    + ["-Xlinker", "--end-group", "-Xlinker", "--no-export-dynamic", "-use-ld=lld"]
    + packedRelocations + functionOrder

let package = Package(
    name: "swoop",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "SwoopKit", targets: ["SwoopKit"]),
        .library(name: "SwoopStore", targets: ["SwoopStore"]),
        .executable(name: "swoop", targets: ["swoop"]),
    ],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.3.0"),
    ],
    targets: [
        .target(
            name: "SwoopKit",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "SwoopStore",
            dependencies: [
                "SwoopKit",
                .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's own API, on the statements GRDB prepares: the read each download makes as it starts (`Row(sqliteStatement:)`).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        .target(
            name: "SwoopPostgres",
            dependencies: [
                "SwoopKit",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(
            name: "SwoopRPC",
            dependencies: [
                "SwoopKit",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .target(
            name: "SwoopDaemon",
            dependencies: [
                "SwoopKit",
                "SwoopRPC",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // The web page, in the binary: no build step, nothing fetched from elsewhere.
            resources: ["index.html", "style.css", "app.js", "format.js", "model.js", "rpc.js", "listview.js", "details.js", "icon.svg"].map { .embedInCode("Web/\($0)") }
        ),
        .target(
            name: "SwoopConsole",
            dependencies: [
                "SwoopKit",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .target(
            name: "SwoopTesting",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "swoop",
            dependencies: [
                "SwoopKit",
                "SwoopStore",
                "SwoopConsole",
                "SwoopDaemon",
                "SwoopRPC",
                "SwoopPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // The release binary carries the Swift runtime and Foundation in itself (see `staticRuntime`).
            linkerSettings: [.unsafeFlags(staticRuntime, .when(platforms: [.linux], configuration: .release))]
        ),
        .testTarget(
            name: "SwoopKitTests",
            dependencies: [
                "SwoopKit", "SwoopStore", "SwoopTesting",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(name: "SwoopStoreTests", dependencies: ["SwoopStore", "SwoopKit", "SwoopTesting"]),
        .testTarget(name: "SwoopFleetTests", dependencies: ["SwoopKit", "SwoopStore", "SwoopPostgres", "SwoopTesting"]),
        .testTarget(name: "SwoopConsoleTests", dependencies: ["SwoopConsole", "SwoopKit"]),
        .testTarget(name: "SwoopRPCTests", dependencies: ["SwoopRPC", "SwoopKit", "SwoopStore", "SwoopTesting"]),
        .testTarget(name: "SwoopCLITests", dependencies: ["swoop", "SwoopKit", "SwoopRPC", "SwoopTesting", "SwoopPostgres"]),
    ]
)
