import Foundation
import QuarantineBase

/// Where a person's running review page (`quarantine review`) can be found: its address, with
/// the secret of its start, in a 0600 file in a private folder of theirs. The page writes it;
/// the CLI opens a running page again instead of starting a second, and a notification's Show
/// preview opens the page at its item.
public enum ReviewPageAddress {
    /// The file's name in ``folder(environment:)``.
    public static let fileName = "review.url"

    /// `$XDG_RUNTIME_DIR/quarantine-review`, else `/tmp/quarantine-review-UID`, made 0700 when
    /// missing; refused when it is a link or someone else's (a shared /tmp).
    public static func folder(environment: [String: String]) throws -> String {
        try Review.privateFolder(base(environment: environment))
    }

    /// Where ``folder(environment:)`` is, made or not.
    static func base(environment: [String: String]) -> String {
        Paths(environment: environment).runtimeDirectory.map { $0 + "/quarantine-review" } ?? "/tmp/quarantine-review-\(geteuid())"
    }

    /// The running page's pid and address (with its secret), if one runs.
    public static func running(in folder: String) -> (pid: Int32, url: String)? {
        let fd = open(folder + "/" + fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 512)
        let count = read(fd, &bytes, bytes.count)
        guard count > 0 else { return nil }
        let lines = String(decoding: bytes[0..<count], as: UTF8.self).split(separator: "\n")
        guard lines.count >= 2, let pid = Int32(lines[0]), pid > 0, kill(pid, 0) == 0 || errno == EPERM else { return nil }
        return (pid, String(lines[1]))
    }

    /// `url` (an address with `?token=`) at `path` instead of its root.
    public static func address(_ url: String, at path: String) -> String {
        url.replacingOccurrences(of: "/?token=", with: path + "?token=")
    }

    /// Writes a 0600 page in `folder` that sends the browser to `url`, and returns its path: the
    /// browser is given this file, so the secret never appears on a command line (other
    /// accounts can read those in /proc).
    public static func launcher(for url: String, in folder: String) -> String? {
        let path = folder + "/open.html"
        let escaped = url.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "<", with: "&lt;")
        let page = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0; url=\(escaped)\"><title>Review</title></head>"
            + "<body><a href=\"\(escaped)\">Open the review page</a></body></html>"
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let bytes = Array(page.utf8)
        return bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count ? path : nil
    }
}
