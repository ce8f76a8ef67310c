import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// ONNX Runtime's own optimised form of a model (its "ORT format"), kept beside the model so that
/// a later session skips parsing and optimising the graph again.
///
/// Every process that judges pictures creates the two sessions: each analysis worker at its start
/// (again after each idle exit), `scan`, `stream`. From the `.onnx` files that took 146 + 90 ms of
/// CPU; from the optimised copies 80 + 70 ms, with the same outputs to the bit and the same speed
/// per picture (docs/performance.md, "Loading the models"). A session reads its copy mapped in
/// place (``mappedIfVouchedFor()``), which took a worker's start another ~35 ms lower.
///
/// The copy is named for the model's version (``ModelDigestRecord/Identity``: any change to the
/// model names another copy), the runtime's version and this CPU's features (the optimised graph
/// holds kernels chosen for them), as `.320n.onnx.<16 hex digits>.ort`.
///
/// It is believed as the models' own record is (``ModelDigestRecord``): only while the folder's
/// trusted record lists this very version of it (device, inode, size, times), which only this
/// process's user or root can have written, in a folder nobody else can write. So a copy is made
/// only where a record can be kept (never under `/usr`, never in a folder of another account:
/// the guardian's workers read root's copies but make none), and a copy that was changed, cut
/// short or left by a process that died while writing it is not used: the session is made from
/// the model, as before, and the copy made again.
struct OptimizedModelCopy {
    /// The folder of the model and its copy.
    let folder: String
    /// The copy's name without its key: `.320n.onnx.` (older copies of the same model share it).
    let prefix: String
    /// The copy's file name in `folder`.
    let fileName: String
    /// Where the copy for the model is, or would be written.
    var path: String { folder + "/" + fileName }

    /// The copy of the model at `modelPath` for the runtime of `runtimeVersion`, or nil when the
    /// model is no regular file, its name cannot go in a record, or this CPU's features cannot be read.
    init?(modelPath: String, runtimeVersion: String) {
        guard let identity = ModelDigestRecord.Identity(ofFileAt: modelPath), let features = Self.cpuFeatures else { return nil }
        let (folder, name, _) = ModelDigestRecord.recordPath(forFileAt: modelPath)
        guard !name.contains(" "), !name.contains("\n") else { return nil }
        self.folder = folder
        prefix = "." + name + "."
        let key = SHA256.hash(data: Data((identity.fields + [runtimeVersion, features, "ORT_ENABLE_ALL"]).joined(separator: "\n").utf8))
        fileName = prefix + key.prefix(8).hexString + ".ort"
    }

    /// This CPU's feature flags (the first `flags` line of /proc/cpuinfo), read once: before an
    /// analysis worker's seal, which is when it loads its models.
    static let cpuFeatures: String? = {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix("flags") }.map(String.init)
    }()

    /// Whether the copy is there and the folder's trusted record vouches for this version of it
    /// (the check ``mappedIfVouchedFor()`` makes on the descriptor it maps).
    var isVouchedFor: Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return vouchedSize(of: descriptor) != nil
    }

    /// The copy mapped into memory, for a session made from its bytes, when the folder's trusted
    /// record vouches for the very file opened: its identity is taken from the descriptor, so a
    /// copy swapped in after the check is not the one mapped. Nil otherwise.
    func mappedIfVouchedFor() -> MappedModelBytes? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return vouchedSize(of: descriptor).flatMap { MappedModelBytes(descriptor: descriptor, count: $0) }
    }

    /// The size of the open copy `descriptor` when the record lists its identity (device, inode,
    /// size, times); nil otherwise.
    private func vouchedSize(of descriptor: Int32) -> Int? {
        guard let identity = ModelDigestRecord.Identity(ofDescriptor: descriptor), identity.size > 0,
              ModelDigestRecord.recordedDigest(forFileAt: path, identity: identity) != nil else { return nil }
        return Int(identity.size)
    }

    /// Whether this process may write a copy here (where it keeps records: ``ModelDigestRecord/canRecord(inFolder:)``).
    var canWrite: Bool { ModelDigestRecord.canRecord(inFolder: folder) }

    /// A name for the runtime to write a new copy to, beside the copy.
    func temporaryPath() -> String { path + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max)).part" }

    /// Puts the copy the runtime wrote at `temporary` in place, records it, and removes this
    /// model's older copies. Best effort: a copy that cannot be put in place or recorded is removed.
    func install(from temporary: String) {
        // Readable by all, as the models are (a worker user reads root's copy); written by its owner only.
        guard chmod(temporary, 0o644) == 0, let digest = try? ModelCatalog.sha256(ofFileAt: temporary), rename(temporary, path) == 0 else {
            unlink(temporary)
            return
        }
        // The identity after the rename, which changes the status-change time.
        guard let identity = ModelDigestRecord.Identity(ofFileAt: path) else { return }
        ModelDigestRecord.record(digest, forFileAt: path, identity: identity)
        removeLeftovers()
    }

    /// Removes this model's older copies, and the partial copies of processes that are gone (a
    /// worker killed while its runtime wrote one). Only where this process may write copies.
    func removeLeftovers() {
        guard canWrite else { return }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(prefix) && name != fileName {
            if name.hasSuffix(".ort") {
                unlink(folder + "/" + name)
            } else if name.hasSuffix(".part") {
                // NAME.ort.PID.RANDOM.part
                let fields = name.split(separator: ".")
                if fields.count >= 4, let pid = Int32(fields[fields.count - 3]), kill(pid, 0) != 0 && errno == ESRCH {
                    unlink(folder + "/" + name)
                }
            }
        }
    }
}

/// A read-only private mapping of a model's optimised copy, kept while the session made from it
/// lives: the runtime reads the graph where it lies in these bytes (the weights it copies out).
///
/// A copy is only ever replaced by a rename and removed by an unlink, which leave a mapped file
/// as it was; only its owner (the user, or root for the guardian's copies) could change it in place.
final class MappedModelBytes: @unchecked Sendable {
    let base: UnsafeMutableRawPointer
    let count: Int

    init?(descriptor: Int32, count: Int) {
        guard let base = mmap(nil, count, PROT_READ, MAP_PRIVATE, descriptor, 0), base != MAP_FAILED else { return nil }
        self.base = base
        self.count = count
    }

    deinit { munmap(base, count) }
}
