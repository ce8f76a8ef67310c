import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension BrowserHistory {
    /// Whether a browser may still write the history of a download written at `writtenAt` (the
    /// file's modification time, taken from the file or its record: by then the file may be in
    /// the vault or held aside): a Chromium-family browser runs for one of the profiles (its
    /// user-data folder's `SingletonLock` names a live process) and the file was written less
    /// than ``longestCommitDelay`` ago. Chromium commits its history about every 10 s (measured
    /// 2.6 to 10.3 s after the final rename); Firefox writes it at once, so it never needs
    /// waiting for.
    public func mayStillRecord(writtenAt: Date, now: Date = Date()) -> Bool {
        let limit = Double(Self.longestCommitDelay.components.seconds)
        guard now.timeIntervalSince(writtenAt) < limit else { return false }
        let userDataFolders = Set(profiles().filter { $0.kind == .chromium }.flatMap { [$0.folder, ($0.folder as NSString).deletingLastPathComponent] })
        return userDataFolders.contains { Self.browserRuns(in: $0) }
    }

    /// Whether the `SingletonLock` of a Chromium user-data folder names a process that runs
    /// (the link's target is `HOSTNAME-PID`).
    static func browserRuns(in folder: String) -> Bool {
        var buffer = [CChar](repeating: 0, count: 512)
        let count = readlink(folder + "/SingletonLock", &buffer, buffer.count - 1)
        guard count > 0 else { return false }
        let target = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let dash = target.lastIndex(of: "-"), let pid = Int32(target[target.index(after: dash)...]), pid > 0 else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }
}
