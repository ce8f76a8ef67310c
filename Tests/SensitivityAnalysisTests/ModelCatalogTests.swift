import Foundation
import Testing
@testable import SensitivityAnalysis

/// Where the runtime and the models are looked for: no models needed.
@Suite("Model catalog search path")
struct ModelCatalogTests {
    @Test("the program's own prefix is searched after the user's folder and before the package's")
    func ownPrefix() {
        let environment = ["HOME": "/home/a", "XDG_DATA_HOME": "/home/a/.local/share"]
        let catalog = ModelCatalog.standard(environment: environment, executablePath: "/opt/q/bin/quarantine")
        #expect(catalog.runtimeDirectories == ["/home/a/.local/share/quarantine/lib", "/opt/q/lib/quarantine", "/usr/lib/quarantine"])
        #expect(catalog.modelDirectories == ["/home/a/.local/share/quarantine/models", "/opt/q/share/quarantine/models", "/usr/share/quarantine/models"])
        let package = ModelCatalog.standard(environment: environment, executablePath: "/usr/bin/quarantine")
        #expect(package.runtimeDirectories == ["/home/a/.local/share/quarantine/lib", "/usr/lib/quarantine"], "/usr once")
        let build = ModelCatalog.standard(environment: environment, executablePath: "/src/.build/release/quarantine")
        #expect(build.runtimeDirectories == ["/home/a/.local/share/quarantine/lib", "/usr/lib/quarantine"], "a build folder is no prefix")
        let only = ModelCatalog.standard(environment: environment.merging(["QUARANTINE_DATA_DIR": "/d"]) { $1 }, executablePath: "/opt/q/bin/quarantine")
        #expect(only.runtimeDirectories == ["/d/lib"] && only.modelDirectories == ["/d/models"], "QUARANTINE_DATA_DIR alone")
    }

    @Test("install prefixes", arguments: [("/usr/bin/quarantine", "/usr"), ("/home/a/.local/bin/quarantine", "/home/a/.local"),
                                          ("/bin/quarantine", ""), ("/usr/libexec/quarantine", nil), ("bin/quarantine", nil), ("/quarantine", nil)] as [(String, String?)])
    func prefixes(path: String, prefix: String?) {
        #expect(ModelCatalog.installPrefix(ofExecutable: path) == prefix)
    }

    @Test("the running program's path comes from /proc/self/exe")
    func executablePath() throws {
        let path = try #require(ModelCatalog.executablePath())
        #expect(path.hasPrefix("/") && FileManager.default.isExecutableFile(atPath: path))
    }
}
