import Crypto
import Foundation
import QuarantineBase

/// Fixtures made by outside programs (ffmpeg, heif-enc, avifenc, cjxl, img2webp, a Python maker),
/// cached by content so each is made once per machine (issue 27, the suite's own time);
/// ``run(_:_:output:setUp:)`` runs such a program.
///
/// The key is the program (its path, size and modification time, so an upgraded encoder makes
/// new fixtures), the arguments with the output reduced to its extension, and the sha256 of every
/// other argument that names a file (an input picture, a script). A cached output is copied to
/// where the test asked for it; a folder output is copied whole. The cache is
/// `${XDG_CACHE_HOME:-~/.cache}/quarantine/test-fixtures`; `QUARANTINE_TEST_FIXTURE_CACHE=off`
/// makes every fixture afresh. `make test` fills it first from the recipes in the tree
/// (``Recipes``, `make fixtures`).
public enum FixtureCache {
    /// Makes `output` with `make` unless a fixture of the same key is cached, in which case it is
    /// copied there. `arguments` (with `output` among them) are what `make` runs `program` with.
    public static func make(program: String, arguments: [String], output: String, _ make: () throws -> Void) throws {
        guard let cache = directory(), !namesATemporaryPathOtherThanAFile(arguments, output: output) else { return try make() }
        let key = self.key(program: program, arguments: arguments, output: output)
        let ext = (output as NSString).pathExtension
        Recipes.record(program: program, arguments: arguments, output: output)
        let cached = cache.appendingPathComponent(ext.isEmpty ? key : key + "." + ext)
        if FileManager.default.fileExists(atPath: cached.path) {
            try? FileManager.default.removeItem(atPath: output)
            try FileManager.default.copyItem(atPath: cached.path, toPath: output)
            return
        }
        try make()
        // Two tests (or two test processes) may make the same fixture at once: each copies to a
        // name of its own, and the rename puts one whole copy in place.
        let partial = cache.appendingPathComponent(key + ".\(getpid()).\(UUID().uuidString).part")
        if (try? FileManager.default.copyItem(atPath: output, toPath: partial.path)) != nil,
           rename(partial.path, cached.path) != 0 {
            try? FileManager.default.removeItem(at: partial)  // a folder already there: keep the first
        }
    }

    /// Runs `program` with `arguments` (the caller's environment, posix_spawn: ``Spawned``) to make
    /// `output`, unless it is cached (``make(program:arguments:output:_:)``). Throws with the
    /// program's own errors and `setUp` (what installs it) when it fails; nothing is cached then.
    public static func run(_ program: String, _ arguments: [String], output: String, setUp: String = "make setup installs it") throws {
        try make(program: program, arguments: arguments, output: output) {
            let run = try Spawned.run(program, arguments, environment: ProcessInfo.processInfo.environment, timeout: 300)
            guard run.status == 0, !run.timedOut else {
                throw Spawned.Failure(description: "\(program) \(arguments.joined(separator: " ")) failed (status \(run.status)\(run.timedOut ? ", killed after 300 s" : ""); "
                                      + "\(setUp)): \(String(decoding: run.stderr, as: UTF8.self))")
            }
        }
    }

    /// Whether an argument other than the output holds a temporary path that is not a file read
    /// whole (a pattern such as `frame%d.png`, a folder): it is in the key as written, so the
    /// fixture would be kept and never asked for again (the cache grew by such files at every run).
    public static func namesATemporaryPathOtherThanAFile(_ arguments: [String], output: String) -> Bool {
        arguments.contains { argument in
            argument != output && (argument.contains(NSTemporaryDirectory()) || argument.contains("/tmp/")) && !namesAFile(argument)
        }
    }

    /// Whether `argument` is an absolute path to a regular file (through links, as stat(2)): an
    /// input the key takes by its bytes.
    static func namesAFile(_ argument: String) -> Bool {
        var info = stat()
        return argument.hasPrefix("/") && stat(argument, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// The cache folder, or nil when caching is off or the folder cannot be made.
    public static func directory() -> URL? {
        let environment = ProcessInfo.processInfo.environment
        if environment["QUARANTINE_TEST_FIXTURE_CACHE"] == "off" { return nil }
        let base = environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory() + "/.cache"
        let url = URL(fileURLWithPath: base).appendingPathComponent("quarantine/test-fixtures")
        return (try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)) != nil ? url : nil
    }

    /// The program's identity, the arguments with the output reduced to its extension, and each
    /// other argument naming a regular file reduced to its hash.
    public static func key(program: String, arguments: [String], output: String) -> String {
        var hasher = SHA256()
        func add(_ text: String) { hasher.update(data: Data(text.utf8)); hasher.update(data: Data([0])) }
        var info = stat()
        add(stat(program, &info) == 0 ? "\(program) \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)" : program)
        for argument in arguments {
            if argument == output {
                add("out." + (argument as NSString).pathExtension)
            } else if namesAFile(argument), let data = FileManager.default.contents(atPath: argument) {
                add("file:"); hasher.update(data: data)
            } else {
                add(argument)
            }
        }
        return hasher.finalize().hexString
    }
}

/// The fixtures' recipes, kept in the tree (`Tests/Fixtures/recipes`) so that `make fixtures`
/// (`scripts/make-fixtures.py`, a step of `make test`) fills the cache before the suite on a
/// fresh machine, two at a time, and the suite copies what it would otherwise make (issue 27).
///
/// `make fixture-recipes` runs the suite with `QUARANTINE_TEST_FIXTURE_RECORD` naming a folder:
/// every fixture asked for (made or copied) writes its recipe there, `<its sha256>.json`: the program
/// and the arguments, the output as `{output}`, a file of the repository as `{repo:PATH}`, any
/// other input file as `{input:SHA256.EXT}`, its bytes kept in `inputs/` (test cards and the
/// frames the tests draw; a recipe whose inputs weigh over 512 KiB is not kept). A fixture whose
/// arguments name a temporary path in another form is not cached, and so not recorded either
/// (``FixtureCache/namesATemporaryPathOtherThanAFile(_:output:)``).
public enum Recipes {
    public static let variable = "QUARANTINE_TEST_FIXTURE_RECORD"
    /// The most a recipe's own inputs may weigh (its files outside the repository).
    public static let maximumInputBytes = 512 << 10
    public static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path + "/"

    static func record(program: String, arguments: [String], output: String) {
        guard let folder = ProcessInfo.processInfo.environment[variable], folder.hasPrefix("/") else { return }
        let inputs = folder + "/inputs"
        try? FileManager.default.createDirectory(atPath: inputs, withIntermediateDirectories: true)
        var recorded: [String] = [], blobs: [(name: String, data: Data)] = []
        for argument in arguments {
            if argument == output {
                recorded.append("{output}")
            } else if FixtureCache.namesAFile(argument), let data = FileManager.default.contents(atPath: argument) {
                if argument.hasPrefix(repository) {
                    recorded.append("{repo:\(argument.dropFirst(repository.count))}")
                    continue
                }
                let ext = (argument as NSString).pathExtension
                let name = SHA256.hash(data: data).hexString + (ext.isEmpty ? "" : "." + ext)
                blobs.append((name, data))
                recorded.append("{input:\(name)}")
            } else {
                recorded.append(argument)
            }
        }
        // Kept small: a fixture drawn from large frames the test draws (TIFF pages, an animation's
        // frames) is cheap to make, and its frames would weigh more in the tree than it saves.
        guard blobs.reduce(0, { $0 + $1.data.count }) <= maximumInputBytes else { return }
        for blob in blobs where !FileManager.default.fileExists(atPath: inputs + "/" + blob.name) {
            FileManager.default.createFile(atPath: inputs + "/" + blob.name, contents: blob.data)
        }
        let recipe: [String: Any] = ["program": program, "arguments": recorded, "output_extension": (output as NSString).pathExtension]
        guard let json = try? JSONSerialization.data(withJSONObject: recipe, options: [.sortedKeys, .prettyPrinted]) else { return }
        // Named by its own content, so that recording again on another machine (another key: the
        // program's time) names the same recipe the same.
        let name = SHA256.hash(data: json).hexString
        FileManager.default.createFile(atPath: folder + "/" + name + ".json", contents: json)
    }
}
