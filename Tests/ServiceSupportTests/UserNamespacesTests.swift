import Foundation
import Testing
@testable import ServiceSupport

/// What `guardian enable`, `guardian status` and `doctor` say about private mounts (issue 26).
@Suite("User namespaces")
struct UserNamespacesTests {
    /// A stand-in /proc/sys with the given switches, in a fresh folder.
    func procSys(_ values: [String: String]) throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("procsys-\(UUID().uuidString)").path
        for (name, value) in values {
            let path = root + "/" + name
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try (value + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        }
        return root
    }

    @Test("each switch that closes them is named; open ones are said plainly, with the ways and their costs")
    func switches() throws {
        let debianClosed = UserNamespaces.current(procSys: try procSys(["kernel/unprivileged_userns_clone": "0", "user/max_user_namespaces": "63000"]))
        #expect(debianClosed.closedBy == "kernel.unprivileged_userns_clone = 0")
        #expect(debianClosed.guardianWords.contains("closed"))
        let globalClosed = UserNamespaces.current(procSys: try procSys(["user/max_user_namespaces": "0"]))
        #expect(globalClosed.closedBy == "user.max_user_namespaces = 0")
        let appArmor = UserNamespaces.current(procSys: try procSys(["kernel/apparmor_restrict_unprivileged_userns": "1", "user/max_user_namespaces": "9"]))
        #expect(appArmor.closedBy?.contains("apparmor") == true)
        let open = UserNamespaces.current(procSys: try procSys(["kernel/unprivileged_userns_clone": "1", "user/max_user_namespaces": "63000"]))
        #expect(open.closedBy == nil)
        #expect(open.guardianWords.contains("open to every account") && open.guardianWords.contains("pam_quarantine"))
        #expect(open.ways.contains("pam_quarantine.so") && open.ways.contains("keeps browsers working"), "the way that keeps browsers working is offered")
        #expect(open.ways.contains("kernel.unprivileged_userns_clone=0"), "offered where the kernel has it")
        #expect(open.ways.contains("Chromium") && open.ways.contains("Flatpak"), "the costs are said")
        let noDebianPatch = UserNamespaces.current(procSys: try procSys(["user/max_user_namespaces": "63000"]))
        #expect(!noDebianPatch.ways.contains("unprivileged_userns_clone=0 (this kernel"), "not offered where the kernel lacks it")
    }

    @Test("this machine's kernel is read (user.max_user_namespaces exists on every kernel with user namespaces)")
    func thisMachine() {
        #expect(UserNamespaces.current().maxUserNamespaces != nil)
    }
}
