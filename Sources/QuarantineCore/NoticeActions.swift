import Foundation
import QuarantineStore
import SensitivityAnalysis
import QuarantineBase

extension Review {
    /// What a button on a notification did.
    public enum NoticeActionResult: Sendable {
        /// Open this file in the desktop's viewer: a copy of the blurred preview, or the help page.
        case open(String)
        /// The file is back (``Vault/Release`` says where).
        case putBack(Vault.Release)
        /// The file was deleted and its bytes blocked.
        case deleted
    }

    /// Does what a notification's button asks. The click is the decision, as adult mode's one
    /// confirmation; the mode's rules still apply, so in child mode (which never offers them)
    /// Put back and Delete are refused without the guardian PIN.
    ///
    /// A preview is opened from a copy in `viewingFolder`, a private folder holding nothing but
    /// such copies: an image viewer browses the folder of the file it shows, and the vault's
    /// item folders hold the originals beside their previews.
    public func perform(_ action: Notice.Action, viewingFolder: String, helpPage: String?) throws -> NoticeActionResult {
        switch action {
        case .showPreview(let id):
            guard let item = try item(id), item.status == .quarantined else { throw Refusal.refused("item \(id) is not in the vault any more") }
            guard let preview = preview(of: item) else { throw Refusal.refused("item \(id) has no preview") }
            let folder = try Self.privateFolder(viewingFolder)
            let copy = folder + "/quarantine-item-\(id)-preview.jpg"
            unlink(copy)
            guard let bytes = FileManager.default.contents(atPath: preview),
                  FileManager.default.createFile(atPath: copy, contents: bytes, attributes: [.posixPermissions: 0o600]) else {
                throw Refusal.refused("cannot copy the preview of item \(id) into \(folder)")
            }
            return .open(copy)
        case .getHelp:
            if let helpPage { return .open(helpPage) }
            let folder = try Self.privateFolder(viewingFolder)
            let page = folder + "/quarantine-get-help.html"
            guard FileManager.default.createFile(atPath: page, contents: Data(HelpPage.html.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw Refusal.refused("cannot write the help page into \(folder)")
            }
            return .open(page)
        case .putBack(let id):
            return .putBack(try release(id, consent: try consent(to: .release, confirmed: true, pin: nil)))
        case .delete(let id):
            _ = try block(id, keep: false, origin: false, consent: try consent(to: .block, confirmed: true, pin: nil))
            return .deleted
        }
    }

    /// `path` as a folder of this user's alone (made 0700 when missing); refuses a link or a
    /// folder someone else owns (a shared /tmp).
    public static func privateFolder(_ path: String) throws -> String {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw Refusal.refused("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
            throw Refusal.refused("\(path) is not a private folder of this user; previews are not put there")
        }
        return path
    }

    /// The folder previews are copied into for viewing: `$XDG_RUNTIME_DIR/quarantine-view`
    /// (a per-user tmpfs), else one beside the vault.
    public static func viewingFolder(vault: Vault, environment: [String: String]) -> String {
        viewingFolder(base: (vault.root as NSString).deletingLastPathComponent, environment: environment)
    }

    /// The folder previews are copied into for viewing, for the vault whose folder is `base`.
    public static func viewingFolder(base: String, environment: [String: String]) -> String {
        Paths(environment: environment).runtimeDirectory.map { $0 + "/quarantine-view" } ?? base + "/view"
    }
}

/// The page "Get help" opens in child mode: plain words, no network needed.
public enum HelpPage {
    public static let html = """
    <!DOCTYPE html>
    <html lang="en"><head><meta charset="utf-8"><title>You can get help</title>
    <style>body{font-family:sans-serif;max-width:40em;margin:2em auto;line-height:1.5;font-size:1.2em;color:#222}h1{color:#2a6}</style>
    </head><body>
    <h1>You did nothing wrong</h1>
    <p>A picture or a video was put away because it might show private parts of the body.
    It is kept safe and blurred. You don't have to look at it.</p>
    <h2>Talk to someone you trust</h2>
    <ul>
    <li>A parent, a grandparent, an older brother or sister, an aunt or uncle.</li>
    <li>A teacher, a school nurse or counsellor, a sports coach.</li>
    <li>A friend's parent you know well.</li>
    </ul>
    <p>You can say: <em>"I got a picture that made me feel uncomfortable. Can you help me?"</em></p>
    <h2>If someone asked you for pictures</h2>
    <p>Don't send any. It is not your fault, even if you already did. Tell a grown-up you trust.
    Nobody is allowed to ask you for pictures of your body, and nobody may make you keep it a secret.</p>
    <h2>Child helplines</h2>
    <p>You can call or chat with a child helpline for free. In many countries the number is
    <strong>116 111</strong>. Child Helpline International lists the helpline for every country:
    childhelplineinternational.org.</p>
    <p>If you are in danger right now, call your country's emergency number.</p>
    </body></html>
    """
}
