// swift-tools-version:6.0
import PackageDescription

/// Debian's multiarch folder for this machine's libraries.
#if arch(arm64)
let multiarch = "aarch64-linux-gnu"
#else
let multiarch = "x86_64-linux-gnu"
#endif

/// The pixel and frame loops (decoding, resampling, the models' input, the near-identical test)
/// optimised in debug builds too: `make test` runs a debug build, and unoptimised, these loops
/// were ~40% of a video scan's CPU (issue 27, "The suite's own time"). Release builds are -O anyway.
let optimisedInDebug: [SwiftSetting] = [.unsafeFlags(["-O"], .when(configuration: .debug))]

let package = Package(
    name: "quarantine",
    products: [
        .executable(name: "quarantine", targets: ["quarantine"]),
        .library(name: "SensitivityAnalysis", targets: ["SensitivityAnalysis"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // The review page's local HTTP server (issue 32).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        // MARK: - C libraries
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg",
                       providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(name: "CFFmpeg",
                       providers: [.apt(["libavdevice-dev", "libavformat-dev", "libavcodec-dev", "libswscale-dev", "libavutil-dev"])]),
        .systemLibrary(name: "CWebP", pkgConfig: "libwebpdemux", providers: [.apt(["libwebp-dev"])]),
        .systemLibrary(name: "CHeif", providers: [.apt(["libheif-dev"])]),
        // librsvg's headers need glib's and cairo's include folders; they are given to this C
        // target alone (a pkg-config system library would pass them, and -pthread, to every
        // Swift target that imports it).
        .target(name: "CSVGRender", dependencies: ["CLazyLibraries"],
                cSettings: [.unsafeFlags(["/usr/include/librsvg-2.0", "/usr/include/glib-2.0", "/usr/lib/\(multiarch)/glib-2.0/include",
                                          "/usr/include/gdk-pixbuf-2.0", "/usr/include/cairo"].map { "-I" + $0 })],
                linkerSettings: ["gobject-2.0", "glib-2.0"].map { .linkedLibrary($0) }),
        // FFmpeg, libheif, libjxl, cairo, Poppler and librsvg, opened at their first call instead
        // of at every start (about 125 shared libraries: 51 ms of a `quarantine list`'s 85 ms).
        // Its functions are written by scripts/lazy-libraries.py.
        .target(name: "CLazyLibraries",
                cSettings: [.unsafeFlags(["/usr/include/librsvg-2.0", "/usr/include/glib-2.0", "/usr/lib/\(multiarch)/glib-2.0/include",
                                          "/usr/include/gdk-pixbuf-2.0", "/usr/include/cairo", "/usr/include/poppler/glib", "/usr/include/poppler"].map { "-I" + $0 })],
                linkerSettings: [.linkedLibrary("dl")]),
        .systemLibrary(name: "CJXL", providers: [.apt(["libjxl-dev"])]),
        // Archives and zip-based documents (zip, tar and its compressed forms, 7z, rar).
        .systemLibrary(name: "CArchive", pkgConfig: "libarchive", providers: [.apt(["libarchive-dev"])]),
        // PDF pages drawn by Poppler (its glib API), behind plain C calls as CSVGRender does.
        .target(name: "CPDFRender", dependencies: ["CLazyLibraries"],
                cSettings: [.unsafeFlags(["/usr/include/poppler/glib", "/usr/include/poppler", "/usr/include/glib-2.0", "/usr/lib/\(multiarch)/glib-2.0/include",
                                          "/usr/include/cairo"].map { "-I" + $0 })],
                linkerSettings: ["gobject-2.0", "glib-2.0"].map { .linkedLibrary($0) }),
        .target(name: "COnnxRuntime", linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "CSystemShims"),
        // The git commit of the build, for --version (scripts/embed-version.sh writes it).
        .target(name: "CBuildInfo"),
        .target(name: "CPNGRows", linkerSettings: [.linkedLibrary("png16")]),
        // sqlite3_db_config (variadic) for the browsers' history databases, read as untrusted.
        .target(name: "CSQLiteHarden", linkerSettings: [.linkedLibrary("sqlite3")]),
        .target(name: "CTIFFPages", linkerSettings: [.linkedLibrary("tiff")]),
        .systemLibrary(name: "CInotifyTools", providers: [.apt(["libinotifytools0-dev"])]),
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1",
                       providers: [.apt(["libdbus-1-dev"])]),

        // MARK: - Libraries
        .target(name: "MediaDecoding", dependencies: ["Locking", "CLazyLibraries", "CTurboJPEG", "CFFmpeg", "CPNGRows", "CTIFFPages", "CHeif", "CWebP", "CJXL", "CSVGRender", "CArchive", "CPDFRender", "PathBytes"],
                swiftSettings: optimisedInDebug),
        .target(name: "SensitivityAnalysis", dependencies: [
            "QuarantineBase", "MediaDecoding", "COnnxRuntime", "CSystemShims", "Locking",
            .product(name: "DequeModule", package: "swift-collections"),
            .product(name: "Crypto", package: "swift-crypto"),
        ], swiftSettings: optimisedInDebug),

        .target(name: "QuarantineStore", dependencies: [
            "QuarantineBase", "MediaDecoding", "CSystemShims", "Locking", "PathBytes",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),

        // The use cases: intake decisions, review and guardian rules, configuration, notices.
        .target(name: "QuarantineCore", dependencies: [
            "QuarantineBase", "QuarantineStore", "SensitivityAnalysis", "MediaDecoding", "DownloadOrigins", "Locking", "PathBytes",
        ]),

        // Where a download came from, read from the browsers' own download history.
        .target(name: "DownloadOrigins", dependencies: ["QuarantineBase", "CSQLiteHarden", "CSystemShims", .product(name: "GRDB", package: "GRDB.swift"),
                                                   .product(name: "GRDBSQLite", package: "GRDB.swift")]),
        .target(name: "PollSupport"),
        // Under everything: the modes, the paths (`Paths`, the one resolver of XDG and system
        // folders), the pinned runtime and models, and (re-exported) Locking and PathBytes.
        .target(name: "QuarantineBase", dependencies: ["Locking", "PathBytes"]),
        // A lock ThreadSanitizer sees (Synchronization.Mutex's futex lock is invisible to it).
        .target(name: "Locking"),
        .target(name: "PathBytes"),
        .target(name: "FolderWatch", dependencies: ["Locking", "CInotifyTools", "PollSupport", "PathBytes"]),
        .target(name: "ServiceSupport", dependencies: ["QuarantineBase", "CDBus", "PollSupport", "CSystemShims"]),
        // The confined analysis worker process and the service's side of it.
        .target(name: "AnalysisWorker", dependencies: ["QuarantineBase", "SensitivityAnalysis", "MediaDecoding", "ServiceSupport", "CSystemShims", "DownloadOrigins", "Locking"]),
        // The guardian service's socket API (requests, answers, the CLI's client) and the service.
        .target(name: "GuardianAPI", dependencies: ["QuarantineBase", "QuarantineStore", "SensitivityAnalysis", "ServiceSupport"]),
        // The one way a front end reaches the core: the request types of GuardianAPI, served by the
        // person's own vault (LocalBackend) or a guardian service's socket (SocketBackend).
        .target(name: "QuarantineBackend", dependencies: ["GuardianAPI", "QuarantineCore", "QuarantineStore", "SensitivityAnalysis", "ServiceSupport"]),
        .target(name: "GuardianService", dependencies: [
            "QuarantineBase", "GuardianAPI", "QuarantineBackend", "Locking", "AnalysisWorker", "AccountPipeline", "QuarantineCore", "QuarantineStore", "SensitivityAnalysis", "ServiceSupport",
            "CSystemShims",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        ]),
        // One account's pipeline (watch -> backlog -> analysis -> vault -> notices), run by a
        // person's agent and by the guardian service for each protected account.
        .target(name: "AccountPipeline", dependencies: [
            "QuarantineBase", "DownloadOrigins", "CSystemShims", "PathBytes", "Locking", "PollSupport",
            "AnalysisWorker", "GuardianAPI",
            "FolderWatch", "ServiceSupport", "QuarantineCore", "QuarantineStore", "SensitivityAnalysis", "MediaDecoding",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        ]),
        // A person's agent: the pipeline, and the analysis bus for their applications.
        .target(name: "QuarantineAgent", dependencies: [
            "AccountPipeline", "QuarantineBase", "CSystemShims", "PathBytes", "Locking", "GuardianAPI",
            "ServiceSupport", "QuarantineCore", "SensitivityAnalysis", "MediaDecoding",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        ]),

        // The local review page (`quarantine review`): a loopback-only Hummingbird server over the backend.
        .target(name: "ReviewPage", dependencies: [
            "QuarantineBackend", "QuarantineCore", "QuarantineStore", "GuardianAPI", "SensitivityAnalysis", "MediaDecoding", "Locking",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),

        // The commands, as a library: tests run them in process; the executable is their door.
        .target(name: "QuarantineCLI", dependencies: [
            "QuarantineBase", "CBuildInfo", "PathBytes", "Locking",
            "SensitivityAnalysis", "MediaDecoding", "QuarantineCore", "QuarantineStore", "QuarantineAgent", "QuarantineBackend", "ServiceSupport", "AnalysisWorker", "GuardianAPI", "GuardianService", "ReviewPage",
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),

        // MARK: - Executables
        // Release builds link the Swift runtime and Foundation in statically, as the package ships
        // them (make build-static): the tested binary is the shipped one's twin, and each start
        // skips loading the runtime's shared libraries (issue 27, the suite's own time).
        .executableTarget(name: "quarantine", dependencies: ["QuarantineCLI"],
                          linkerSettings: [.unsafeFlags(["-static-stdlib", "-lCoreFoundation", "-l_FoundationICU", "-l_FoundationCollections", "-l_FoundationCShims"], .when(configuration: .release))]),
        // The library used as Apple's SensitiveContentAnalysis is: `swift run quarantine-example FILE`.
        .executableTarget(name: "quarantine-example", dependencies: ["SensitivityAnalysis", "MediaDecoding"], path: "Examples/quarantine-example"),
        .executableTarget(name: "quarantine-bench", dependencies: [
            "SensitivityAnalysis", "MediaDecoding", "CHeif", "CJXL", "CWebP", "QuarantineStore",
        ]),

        // MARK: - Tests
        .target(name: "TestSupport", dependencies: ["CSystemShims", "PathBytes", "QuarantineBase", .product(name: "Crypto", package: "swift-crypto")], path: "Tests/TestSupport"),
        // Runs the analysis sandbox in a forked child and tries what it must refuse (C: after fork
        // in the multithreaded test runner, the child runs no Swift code).
        .target(name: "SandboxProbe", dependencies: ["CSystemShims"], path: "Tests/SandboxProbe"),
        // libFuzzer harnesses (make fuzz builds them with -sanitize=fuzzer,address -DFUZZING; otherwise a stub).
        .executableTarget(name: "quarantine-fuzz", dependencies: ["MediaDecoding", "QuarantineCore", "ServiceSupport", "CDBus", "GuardianAPI"]),

        .testTarget(name: "MediaDecodingTests", dependencies: ["MediaDecoding", "CFFmpeg", "TestSupport"]),
        .testTarget(name: "SensitivityAnalysisTests", dependencies: ["SensitivityAnalysis", "MediaDecoding", "Locking", "TestSupport"]),
        // The Python helpers are run by path (a pty driver, the unit-sandbox runner), not built.
        // The agent and the commands that change something run as the built binary; the polls of
        // the agent's state (status, list, ...) run in process through QuarantineCLI (InProcessCLI).
        .testTarget(name: "CLITests", dependencies: ["TestSupport", "QuarantineCLI", "QuarantineBackend", "QuarantineStore", "SensitivityAnalysis",
                                                     .product(name: "ArgumentParser", package: "swift-argument-parser")], exclude: ["pty_driver.py", "sandbox_exec.py", "guardian_e2e.sh", "analysis_bus_client.py", "guarded_bus.sh", "fake_v4l2_output.c"]),
        .testTarget(name: "FolderWatchTests", dependencies: ["FolderWatch", "Locking"]),
        .testTarget(name: "DownloadOriginsTests", dependencies: ["DownloadOrigins", "CSQLiteHarden", .product(name: "GRDB", package: "GRDB.swift"),
                                                            .product(name: "GRDBSQLite", package: "GRDB.swift")]),
        .testTarget(name: "ServiceSupportTests", dependencies: ["ServiceSupport", "TestSupport", "SandboxProbe"]),
        // pam_quarantine.so (pam/, built with cc by pam/build.sh: a SwiftPM library would carry the
        // Swift runtime into every login) loaded by the real libpam.
        .testTarget(name: "PAMModuleTests", dependencies: ["ServiceSupport"]),
        .testTarget(name: "QuarantineCoreTests", dependencies: ["QuarantineCore", "AccountPipeline", "QuarantineAgent", "AnalysisWorker", "TestSupport", "SandboxProbe", "QuarantineStore", "SensitivityAnalysis", "MediaDecoding", "ServiceSupport",
                                                               "CSystemShims", "FolderWatch", "Locking", "PathBytes",
                                                               .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log"),
                                                               .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]),
        // The guardian service's socket, served in-process (every verb for every role, the limits).
        // The commands run in process, through the local backend and a guardian service's socket.
        .testTarget(name: "CLICommandTests", dependencies: ["QuarantineCLI", "MediaDecoding", "QuarantineBackend", "GuardianService", "GuardianAPI", "QuarantineCore", "QuarantineStore", "SensitivityAnalysis", "ServiceSupport", "TestSupport",
                                                            .product(name: "ArgumentParser", package: "swift-argument-parser"), .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "GuardianServiceTests", dependencies: ["QuarantineBackend", "AccountPipeline", "QuarantineAgent", "QuarantineBase", "Locking", .product(name: "Logging", package: "swift-log"), "GuardianService", "GuardianAPI", "AnalysisWorker", "QuarantineCore", "QuarantineStore", "SensitivityAnalysis", "MediaDecoding", "ServiceSupport", "TestSupport", "DownloadOrigins", .product(name: "GRDB", package: "GRDB.swift"),
                                                                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]),
        // The review page's security checks, with the server on a random loopback port (the browser tests: scripts/review-test.py, make review-test).
        .testTarget(name: "ReviewPageTests", dependencies: ["ReviewPage", "QuarantineBackend", "QuarantineCore", "QuarantineStore", "SensitivityAnalysis", "MediaDecoding",
                                                            "GuardianService", "GuardianAPI", "ServiceSupport", "TestSupport", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "QuarantineStoreTests", dependencies: ["QuarantineStore", "MediaDecoding", "CSystemShims", "Locking", "TestSupport",
                                                                .product(name: "GRDB", package: "GRDB.swift")]),
    ]
)
