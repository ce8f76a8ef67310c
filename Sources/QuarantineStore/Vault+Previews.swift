import Foundation
import MediaDecoding
import PathBytes

extension Vault {
    /// In the vault's folder once every preview in it is at ``BlurredPreview/tinySide``.
    static let previewsMarker = ".previews-6px"

    /// Makes the previews written before ``BlurredPreview`` shrank to 6 px (24-px ones, still a
    /// picture of what was held: the test card was recognised in them) again from themselves,
    /// once per vault: a marker file says it was done. By the vault's holder at its claim, with
    /// the lock held exclusively. Each is replaced whole (a new file renamed over it), so a
    /// crash leaves the old one or the new one; one that cannot be read is left as it is.
    /// Returns how many were made again.
    func softenOldPreviews() -> Int {
        let marker = root + "/" + Self.previewsMarker
        if access(PathBytes.cString(marker), F_OK) == 0 { return 0 }
        guard let items = try? store.items(includeClosed: true) else { return 0 }
        var softened = 0
        for item in items {
            guard let path = previewPath(of: item), let bytes = Self.readOwnFile(path),
                  let decoded = try? JPEGCodec.decode(bytes), let jpeg = try? BlurredPreview.jpeg(from: decoded.image) else { continue }
            let temporary = path + ".new"
            unlink(PathBytes.cString(temporary))
            guard FileManager.default.createFile(atPath: temporary, contents: Data(jpeg), attributes: [.posixPermissions: 0o600]) else { continue }
            if rename(PathBytes.cString(temporary), PathBytes.cString(path)) == 0 { softened += 1 } else { unlink(PathBytes.cString(temporary)) }
        }
        let fd = open(PathBytes.cString(marker), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd >= 0 { close(fd) }
        return softened
    }

    /// A regular file's bytes in the vault's own folders (never through a link), up to 4 MiB.
    static func readOwnFile(_ path: String) -> [UInt8]? {
        let fd = open(PathBytes.cString(path), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= 4 << 20 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let count = bytes[done...].withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            done += count
        }
        return bytes
    }
}
