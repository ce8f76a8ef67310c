import Foundation
import Testing
import TestSupport

/// The fixtures' recipes (Tests/Fixtures/recipes) and `scripts/make-fixtures.py`, which makes
/// them into the cache before the suite (issue 27): its key must be ``FixtureCache``'s to the
/// byte, or every fixture is made twice on a fresh machine.
@Suite("Fixture recipes")
struct FixtureRecipesTests {
    static let recipes = Recipes.repository + "Tests/Fixtures/recipes"

    @Test("make-fixtures.py computes FixtureCache's key: a program, literal arguments, input files by content, the output by its extension, a folder output")
    func scriptKeyIsTheCachesKey() throws {
        let folder = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("card.png").path, other = folder.appendingPathComponent("frame.tif").path
        try Data([0, 1, 2, 255, 10, 0]).write(to: URL(fileURLWithPath: input))
        try Data("second".utf8).write(to: URL(fileURLWithPath: other))
        let cases: [(program: String, arguments: [String], output: String)] = [
            ("/usr/bin/ffmpeg", ["-f", "lavfi", "-i", "testsrc2=s=320x240:r=5:d=2", "-i", input, "-c:v", "libx264", folder.path + "/out.mp4"], folder.path + "/out.mp4"),
            ("/usr/bin/cjxl", [input, other, folder.path + "/x.jxl", "-d", "0"], folder.path + "/x.jxl"),
            ("/usr/bin/python3", [Recipes.repository + "Tests/Fixtures/make_containers.py", input, folder.path + "/made"], folder.path + "/made"),
            ("/nonexistent/program", ["/nonexistent/input.png", "plain", folder.path + "/o"], folder.path + "/o"),
        ]
        let script = """
            import importlib.util, json, sys
            spec = importlib.util.spec_from_file_location("m", sys.argv[1]); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
            for case in json.load(sys.stdin): print(m.key(case["program"], case["arguments"], case["output"]))
            """
        let json = try JSONSerialization.data(withJSONObject: cases.map { ["program": $0.program, "arguments": $0.arguments, "output": $0.output] })
        let stdin = folder.appendingPathComponent("cases.json")
        try json.write(to: stdin)
        let run = try Spawned.run("/bin/sh", ["-c", "exec /usr/bin/python3 -c \"$0\" \"$1\" < \"$2\"", script, Recipes.repository + "scripts/make-fixtures.py", stdin.path],
                                  environment: ProcessInfo.processInfo.environment, timeout: 60)
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        let keys = String(decoding: run.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(keys == cases.map { FixtureCache.key(program: $0.program, arguments: $0.arguments, output: $0.output) })
    }

    @Test("a fixture whose arguments name a temporary path that is no file (a frame pattern, a folder) is made but not kept: it would never be asked for again")
    func temporaryPatternsAreNotKept() throws {
        let folder = try TestEnvironment.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let frame = folder.appendingPathComponent("frame1.png").path, output = folder.appendingPathComponent("anim.gif").path
        try Data("frame".utf8).write(to: URL(fileURLWithPath: frame))
        let pattern = ["-framerate", "2", "-i", folder.appendingPathComponent("frame%d.png").path, "-f", "gif", output]
        #expect(FixtureCache.namesATemporaryPathOtherThanAFile(pattern, output: output))
        #expect(FixtureCache.namesATemporaryPathOtherThanAFile(["-i", folder.path, output], output: output))
        #expect(!FixtureCache.namesATemporaryPathOtherThanAFile(["-i", frame, "-f", "gif", output], output: output))
        #expect(!FixtureCache.namesATemporaryPathOtherThanAFile(["-f", "lavfi", "-i", "testsrc2=s=32x24:d=1", output], output: output))
        var made = 0
        try FixtureCache.make(program: "/usr/bin/true", arguments: pattern, output: output) {
            made += 1
            try Data("gif".utf8).write(to: URL(fileURLWithPath: output))
        }
        #expect(made == 1 && FileManager.default.fileExists(atPath: output))
        let key = FixtureCache.key(program: "/usr/bin/true", arguments: pattern, output: output)
        if let cache = FixtureCache.directory() {
            #expect(!FileManager.default.fileExists(atPath: cache.appendingPathComponent(key + ".gif").path), "kept in the cache")
        }
    }

    @Test("every recipe in the tree is whole: a program, its output, and every input it names in the tree, none over the size kept")
    func recipesAreWhole() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.recipes).filter { $0.hasSuffix(".json") }
        #expect(names.count >= 50, "\(names.count) recipes: run make fixture-recipes")
        for name in names {
            let data = try #require(FileManager.default.contents(atPath: Self.recipes + "/" + name))
            let recipe = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(name)")
            let program = try #require(recipe["program"] as? String, "\(name)"), arguments = try #require(recipe["arguments"] as? [String], "\(name)")
            #expect(program.hasPrefix("/usr/bin/"), "\(name): \(program)")
            #expect(arguments.filter { $0 == "{output}" }.count == 1, "\(name): \(arguments)")
            var weight = 0
            for argument in arguments where argument.hasPrefix("{input:") || argument.hasPrefix("{repo:") {
                let isInput = argument.hasPrefix("{input:")
                let relative = String(argument.dropFirst(isInput ? 7 : 6).dropLast())
                let path = isInput ? Self.recipes + "/inputs/" + relative : Recipes.repository + relative
                // The test photos are made by make testdata, before make fixtures.
                if !isInput && relative.hasPrefix("testdata/") { continue }
                var info = stat()
                #expect(stat(path, &info) == 0, "\(name): \(argument) is not in the tree")
                if isInput { weight += Int(info.st_size) }
            }
            #expect(weight <= Recipes.maximumInputBytes, "\(name): inputs of \(weight) bytes")
        }
    }
}
