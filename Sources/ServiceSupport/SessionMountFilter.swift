import Foundation
import QuarantineBase

/// pam_quarantine: every session of a protected account is denied the mount family of system
/// calls, so the account cannot mount a folder only it sees (`unshare -r -m`, then a tmpfs over
/// `~/Downloads`) while its user namespaces, and so Chromium's and Firefox's sandboxes, keep
/// working. The module (Sources/CPAMQuarantine) reads ``listFile``; this type keeps that list,
/// the module's line in the PAM session stacks and the module file in libpam's folder, and says
/// what is in force. Everything here runs as root (`guardian enable`/`disable`) or only reads.
public struct SessionMountFilter: Sendable {
    /// The module's file name in libpam's folder, and in the PAM lines.
    public static let moduleName = "pam_quarantine.so"
    /// The PAM session stacks (Debian's layout) that every service includes: login, display
    /// managers, sshd and su include common-session; cron, atd and systemd's user manager
    /// (`systemd-user`) common-session-noninteractive.
    public static let stacks = ["common-session", "common-session-noninteractive"]
    /// The first line of the block added to each stack (found again by it).
    static let commentLines = [
        "# quarantine (guardian): no mount system calls in the sessions of the accounts listed in",
        "# /etc/quarantine/protected-uids, so they cannot mount a folder only they see. Added by",
        "# 'quarantine guardian enable', removed by 'quarantine guardian disable' once no account is listed.",
    ]
    /// The line: a session is refused when the module refuses it; a module file that is not
    /// there (the package removed) is skipped, so no account is locked out by it.
    public static let pamLine = "session\t[success=ok ignore=ignore module_unknown=ignore default=die]\tpam_quarantine.so"

    /// /etc/pam.d (tests: a folder of their own).
    public var pamFolder: String
    /// The root-owned list of protected uids the module reads.
    public var listFile: String
    /// libpam's module folder (where pam_unix.so is), if found.
    public var moduleFolder: String?

    public init(pamFolder: String = "/etc/pam.d", listFile: String = Paths.systemConfigurationFolder + "/protected-uids", moduleFolder: String? = SessionMountFilter.systemModuleFolder()) {
        self.pamFolder = pamFolder
        self.listFile = listFile
        self.moduleFolder = moduleFolder
    }

    /// Where libpam loads modules named without a folder from: the folder holding pam_unix.so.
    public static func systemModuleFolder() -> String? {
        #if arch(arm64)
        let multiarch = "aarch64-linux-gnu"
        #else
        let multiarch = "x86_64-linux-gnu"
        #endif
        let candidates = ["/lib/\(multiarch)/security", "/usr/lib/\(multiarch)/security", "/usr/lib64/security", "/lib64/security", "/usr/lib/security", "/lib/security"]
        return candidates.first { FileManager.default.fileExists(atPath: $0 + "/pam_unix.so") }
    }

    /// The module file libpam loads, when it is there.
    public var installedModule: String? {
        guard let moduleFolder else { return nil }
        let path = moduleFolder + "/" + Self.moduleName
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    // MARK: - The list

    /// The uids in the list (empty when there is none). Throws when it cannot be read or a line is
    /// not a uid: the module then refuses every account with a guardian configuration.
    public func protectedUIDs() throws(ServiceError) -> [uid_t] {
        guard FileManager.default.fileExists(atPath: listFile) else { return [] }
        guard let data = FileManager.default.contents(atPath: listFile) else {
            throw ServiceError(code: .fileSystem, operation: "read \(listFile)", message: "cannot read the list of protected accounts")
        }
        return try Self.parse(String(decoding: data, as: UTF8.self), file: listFile)
    }

    /// The uids of a list's text, as the module reads them (`#` comments, one uid a line).
    static func parse(_ text: String, file: String) throws(ServiceError) -> [uid_t] {
        var uids: [uid_t] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            let trimmed = line.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "\r")))
            if trimmed.isEmpty { continue }
            guard trimmed.count <= 10, trimmed.allSatisfy(\.isASCIIDigitCharacter), let value = UInt64(trimmed), value < UInt64(UInt32.max) else {
                throw ServiceError(code: .fileSystem, operation: "read \(file)", message: "line \(index + 1) is not a uid")
            }
            uids.append(uid_t(value))
        }
        return uids
    }

    /// Adds or removes an account; writes the list (root's, 0644) in one rename. Returns the uids now listed.
    @discardableResult
    public func set(uid: uid_t, name: String, protected: Bool) throws(ServiceError) -> [uid_t] {
        var uids = (try? protectedUIDs()) ?? []
        var names: [uid_t: String] = [:]
        if let data = FileManager.default.contents(atPath: listFile) {
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
                let parts = line.split(separator: "#", maxSplits: 1)
                if parts.count == 2, let value = UInt32(parts[0].trimmingCharacters(in: .whitespaces)) {
                    names[uid_t(value)] = parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        uids.removeAll { $0 == uid }
        if protected { uids.append(uid); names[uid] = name.filter { !$0.isNewline && $0 != "#" } }
        uids.sort()
        var text = """
            # The accounts whose sessions pam_quarantine.so denies mount system calls, one uid a line.
            # Written by 'quarantine guardian enable' and 'disable'; root's alone (the module trusts nothing else).

            """
        for value in uids { text += "\(value)" + (names[value].map { "\t# \($0)" } ?? "") + "\n" }
        try Self.replace(listFile, with: text)
        return uids
    }

    /// Writes a root-owned 0644 file in one rename, fsync'd.
    static func replace(_ path: String, with text: String) throws(ServiceError) {
        let temporary = path + ".quarantine-new"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ServiceError(code: .fileSystem, operation: "write \(path)", message: "cannot create \(temporary)", cause: String(cString: strerror(errno))) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let saved = errno
        fchmod(fd, 0o644)
        if getuid() == 0 { fchown(fd, 0, 0) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == bytes.count, synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw ServiceError(code: .fileSystem, operation: "write \(path)", message: "cannot write it", cause: String(cString: strerror(written == bytes.count ? errno : saved)))
        }
    }

    // MARK: - The PAM stacks

    /// The stack's text with the module's block at its end (after pam-auth-update's managed
    /// block, which pam-auth-update keeps as it is); unchanged when the line is there.
    public static func adding(to text: String) -> String {
        if hasLine(text) { return text }
        var result = text
        if !result.isEmpty && !result.hasSuffix("\n") { result += "\n" }
        return result + (commentLines + [pamLine]).joined(separator: "\n") + "\n"
    }

    /// The stack's text without the module's block (its comment lines and any pam_quarantine line).
    public static func removing(from text: String) -> String {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let kept = lines.filter { line in
            !commentLines.contains(String(line)) && !isModuleLine(String(line))
        }
        return kept.joined(separator: "\n")
    }

    /// Whether an active (not commented out) session line loads pam_quarantine.
    public static func hasLine(_ text: String) -> Bool {
        text.split(separator: "\n").contains { isModuleLine(String($0)) }
    }

    static func isModuleLine(_ line: String) -> Bool {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard !trimmed.hasPrefix("#"), trimmed.hasPrefix("session") || trimmed.hasPrefix("-session") else { return false }
        return trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" }).contains { $0 == moduleName || $0.hasSuffix("/" + moduleName) }
    }

    /// Each stack that exists here, and whether it loads the module.
    public func stackState() -> [(stack: String, hasLine: Bool)] {
        Self.stacks.compactMap { stack in
            guard let data = FileManager.default.contents(atPath: pamFolder + "/" + stack) else { return nil }
            return (stack, Self.hasLine(String(decoding: data, as: UTF8.self)))
        }
    }

    /// Adds the module's block to every stack here; returns the stacks it changed. Throws when
    /// there is no stack (a PAM layout that is not Debian's).
    @discardableResult
    public func installLines() throws(ServiceError) -> [String] {
        let present = stackState()
        guard !present.isEmpty else {
            throw ServiceError(code: .fileSystem, operation: "add pam_quarantine to the PAM session stacks",
                               message: "\(pamFolder) has neither \(Self.stacks.joined(separator: " nor ")): add '\(Self.pamLine)' to the session stack of every service yourself")
        }
        var changed: [String] = []
        for (stack, has) in present where !has {
            let path = pamFolder + "/" + stack
            let text = String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
            try Self.replace(path, with: Self.adding(to: text))
            changed.append(stack)
        }
        return changed
    }

    /// Removes the module's block from every stack; returns the stacks it changed.
    @discardableResult
    public func removeLines() throws(ServiceError) -> [String] {
        var changed: [String] = []
        for stack in Self.stacks {
            let path = pamFolder + "/" + stack
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            let text = String(decoding: data, as: UTF8.self)
            let without = Self.removing(from: text)
            guard without != text else { continue }
            try Self.replace(path, with: without)
            changed.append(stack)
        }
        return changed
    }

    /// The PAM services in the folder that open sessions without including a stack that loads
    /// the module (directly or through another service's file): sessions through them are not
    /// filtered. On Debian: runuser and runuser-l, which only root can use.
    public func servicesWithoutModule() -> [String] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: pamFolder)) ?? []).filter { !$0.hasPrefix(".") && !$0.contains(".dpkg-") }.sorted()
        var texts: [String: String] = [:]
        for name in names { texts[name] = FileManager.default.contents(atPath: pamFolder + "/" + name).map { String(decoding: $0, as: UTF8.self) } }
        var memo: [String: Bool] = [:]
        func covers(_ name: String, depth: Int) -> Bool {
            if let known = memo[name] { return known }
            guard depth < 10, let text = texts[name] else { return false }
            var result = false
            for raw in text.split(separator: "\n") {
                let fields = raw.trimmingCharacters(in: .whitespaces).split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
                guard let first = fields.first, !first.hasPrefix("#") else { continue }
                if first == "@include", fields.count > 1, covers(fields[1], depth: depth + 1) { result = true }
                if first.hasSuffix("session"), fields.count > 2 {
                    if Self.isModuleLine(fields.joined(separator: " ")) { result = true }
                    if ["include", "substack"].contains(fields[1]), covers(fields[2], depth: depth + 1) { result = true }
                }
            }
            memo[name] = result
            return result
        }
        func opensSessions(_ name: String) -> Bool {
            (texts[name] ?? "").split(separator: "\n").contains { line in
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                return trimmed.hasPrefix("session") || trimmed.hasPrefix("-session") || trimmed.hasPrefix("@include common-session")
            }
        }
        return names.filter { !$0.hasPrefix("common-") && $0 != "other" && opensSessions($0) && !covers($0, depth: 0) }
    }

    // MARK: - The module file

    /// Where a module built or installed with this program is: beside the executable (`make
    /// build` puts pam/build.sh's output beside the release binary), or in PREFIX/lib/quarantine
    /// (`make install`).
    public static func moduleBeside(executable: String) -> String? {
        let folder = (executable as NSString).deletingLastPathComponent
        let candidates = [folder + "/" + moduleName, folder + "/../lib/quarantine/" + moduleName]
        return candidates.first { FileManager.default.fileExists(atPath: $0) }.map { ($0 as NSString).standardizingPath }
    }

    /// Puts a copy of the module in libpam's folder (root's, 0644, in one rename) unless the same
    /// bytes are there. Returns where libpam loads it from.
    @discardableResult
    public func installModule(from source: String) throws(ServiceError) -> String {
        guard let moduleFolder else {
            throw ServiceError(code: .fileSystem, operation: "install \(Self.moduleName)", message: "libpam's module folder (the one with pam_unix.so) was not found")
        }
        let target = moduleFolder + "/" + Self.moduleName
        guard let bytes = FileManager.default.contents(atPath: source) else {
            throw ServiceError(code: .fileSystem, operation: "install \(Self.moduleName)", message: "cannot read \(source)")
        }
        if FileManager.default.contents(atPath: target) == bytes { return target }
        let temporary = target + ".quarantine-new"
        unlink(temporary)
        guard FileManager.default.createFile(atPath: temporary, contents: bytes, attributes: [.posixPermissions: 0o644]) else {
            throw ServiceError(code: .fileSystem, operation: "install \(Self.moduleName)", message: "cannot write \(temporary)")
        }
        chown(temporary, 0, 0)
        guard rename(temporary, target) == 0 else {
            let cause = String(cString: strerror(errno))
            unlink(temporary)
            throw ServiceError(code: .fileSystem, operation: "install \(Self.moduleName)", message: "cannot put it at \(target)", cause: cause)
        }
        return target
    }
}

extension Character {
    fileprivate var isASCIIDigitCharacter: Bool { ("0"..."9").contains(self) }
}
