import Foundation

/// Where a downloaded file came from, as the browser that downloaded it recorded it.
///
/// Neither Chromium nor Firefox writes the `user.xdg.origin.url` extended attribute on Linux, so
/// this is read from their own download history (see ``BrowserHistory``).
public struct DownloadOrigin: Sendable, Equatable, Codable {
    /// Where the bytes came from: the last URL of the redirect chain (the URL that answered with
    /// the file's bytes).
    public var fileURL: String
    /// The page the download was started from (Chromium: the tab's URL, else the referrer, else
    /// the site; Firefox: the page visit the download visit came from), when one was recorded.
    public var pageURL: String?
    /// The browser whose history named the file: "Chromium", "Google Chrome", "Firefox", ...
    public var browser: String
    /// The profile folder the record was found in.
    public var profile: String
    /// When the browser recorded the download (Chromium: its end, else its start; Firefox: the
    /// destination annotation's time). A record much older than the file itself is one about an
    /// earlier file that had the same name: the caller may compare it with the file's times.
    public var downloadedAt: Date?

    public init(fileURL: String, pageURL: String?, browser: String, profile: String, downloadedAt: Date? = nil) {
        self.fileURL = fileURL
        self.pageURL = pageURL
        self.browser = browser
        self.profile = profile
        self.downloadedAt = downloadedAt
    }
}
