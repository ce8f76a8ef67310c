import CSystemShims
import Foundation
import Locking
import MediaDecoding

/// Containers: archives and zip-based documents (every picture and video entry judged as a file
/// would be, nested containers too) and PDFs (pages drawn and judged, and the images on them).
/// The container is the unit: the first flagged entry or page flags it, and its reasons name it.
extension SensitivityAnalyzer {
    /// The container being walked, for the entries judged inside it (nesting and the budget).
    struct ContainerContext: Sendable {
        var depth: Int
        var budget: ContainerBudget
        /// The outer names, for nested entries' names (`inner.zip/a.jpg`).
        var prefix: String
        /// The outermost container's path, for messages.
        var top: String
    }

    @TaskLocal static var container: ContainerContext?

    func containerReport(forFileAt path: String, type: MediaType, policy: SensitivityPolicy, options: VideoOptions,
                         progress: (@Sendable (VideoProgress) -> Void)?) async -> FileReport {
        let start = DispatchTime.now().uptimeNanoseconds
        func elapsed() -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 }
        let outer = Self.container
        let depth = (outer?.depth ?? -1) + 1
        let budget = outer?.budget ?? ContainerBudget(limits: configuration.limits.containers)
        do {
            if depth > budget.limits.maxDepth {
                throw MediaError(.containerLimit, "has containers nested deeper than \(budget.limits.maxDepth) (the limit of containers.depth)", path: path)
            }
            let file = try await videoPool.run { try MediaFile(path: path) }
            let walk = ContainerWalk(analyzer: self, file: file, type: type, policy: policy, options: options, progress: progress,
                                     context: ContainerContext(depth: depth, budget: budget, prefix: outer?.prefix ?? "", top: outer?.top ?? path))
            var analysis = try await (type == .pdf ? walk.pdf() : walk.archive())
            analysis.elapsedMilliseconds = elapsed()
            // Nothing flagged, but something inside could not be judged: on_error decides.
            if let failure = walk.outcome.withLock({ $0.firstFailure }), !analysis.isSensitive {
                return FileReport(path: path, kind: .container, type: type, analysis: nil, failure: failure, elapsedMilliseconds: elapsed())
            }
            return FileReport(path: path, kind: .container, type: type, analysis: analysis, failure: nil, elapsedMilliseconds: elapsed(),
                              flaggedFrame: walk.outcome.withLock { $0.flaggedFrame })
        } catch {
            return FileReport(path: path, kind: .container, type: type, analysis: nil, failure: .init(error, path: path), elapsedMilliseconds: elapsed())
        }
    }
}

/// One container's walk: its entries or pages, judged one at a time until one is flagged.
final class ContainerWalk: @unchecked Sendable {
    struct Outcome {
        var markers = DocumentMarkers()
        var entries: [ContainerEntry] = []
        var firstFailure: FileReport.Failure?
        var flaggedFrame: RGBImage?
    }

    let analyzer: SensitivityAnalyzer
    let file: MediaFile
    let type: MediaType
    let policy: SensitivityPolicy
    let options: VideoOptions
    let progress: (@Sendable (VideoProgress) -> Void)?
    let context: SensitivityAnalyzer.ContainerContext
    let outcome = Locked(Outcome())
    /// At most this many entries are listed in a report (all are judged).
    static let listedEntries = 1_000

    init(analyzer: SensitivityAnalyzer, file: MediaFile, type: MediaType, policy: SensitivityPolicy, options: VideoOptions,
         progress: (@Sendable (VideoProgress) -> Void)?, context: SensitivityAnalyzer.ContainerContext) {
        self.analyzer = analyzer
        self.file = file
        self.type = type
        self.policy = policy
        self.options = options
        self.progress = progress
        self.context = context
    }

    var path: String { file.path }

    /// The analysis that stands for the container: clean (nothing flagged so far), or the
    /// flagged entry's with reasons that name it.
    func verdict(flagged: SensitivityAnalysis? = nil, detail: (String) -> String = { $0 }) -> SensitivityAnalysis {
        var analysis = SensitivityAnalysis(path: path, kind: .container, type: type, isSensitive: flagged != nil,
                                           detections: flagged?.detections ?? [], nsfwScore: flagged?.nsfwScore,
                                           reasons: flagged?.reasons.map(detail) ?? [], mode: policy.mode,
                                           width: flagged?.width ?? 0, height: flagged?.height ?? 0, identity: file.identity, elapsedMilliseconds: 0)
        analysis.frameTime = flagged?.frameTime
        analysis.entries = type == .pdf ? nil : outcome.withLock { $0.entries }
        analysis.document = type == .pdf ? "PDF" : outcome.withLock { $0.markers.kind }
        return analysis
    }

    func record(_ entry: ContainerEntry) {
        outcome.withLock { o in if o.entries.count < Self.listedEntries { o.entries.append(entry) } }
    }

    func tellProgress(_ fraction: Double?) {
        progress?(VideoProgress(fraction: fraction.map { min(1, max(0, $0)) }, samples: context.budget.entries))
    }

    // MARK: - Archives

    func archive() async throws -> SensitivityAnalysis {
        let budget = context.budget
        let reader = try await analyzer.videoPool.run { [file, type, context] in
            try ArchiveReader(descriptor: file.descriptor, size: file.identity.size, type: type, path: file.path, budget: budget, isTopLevel: context.depth == 0)
        }
        var index = 0
        while let entry = try await analyzer.videoPool.run({ try reader.next() }) {
            try Task.checkCancellation()
            guard entry.isRegularFile else { continue }
            index += 1
            let name = context.prefix + entry.name
            if entry.isEncrypted {
                throw MediaError(.encrypted, "has an encrypted entry (\(name)): it cannot be checked without its password", path: path)
            }
            if type == .zip {
                // What document the zip is, by its own markers: EPUB's and ODF's first entry
                // `mimetype`, OOXML's `[Content_Types].xml` with its part folders.
                if index == 1, entry.name == "mimetype" {
                    let text = try await analyzer.videoPool.run { try Self.readSmall(reader, limit: 128) }
                    outcome.withLock { $0.markers.mimetype = text }
                    continue
                }
                outcome.withLock { $0.markers.note(entry.name) }
            }
            let limits = analyzer.configuration.limits
            guard let staged = try await analyzer.videoPool.run({ try Self.stage(reader, limits: limits, name: name) }) else { continue }
            defer { close(staged.descriptor) }
            let report = try await judge(staged.descriptor, type: staged.type, name: name, key: "\(path)\u{0}\(context.depth):\(index)")
            // A nested archive's entries are listed in its place, by their full names.
            let nestedEntries = staged.type.kind == .container ? report.analysis?.entries : nil
            if let analysis = report.analysis, analysis.isSensitive {
                if let nestedEntries { nestedEntries.forEach(record) } else {
                    record(ContainerEntry(name: name, type: staged.type, isSensitive: true, reasons: analysis.reasons))
                }
                outcome.withLock { $0.flaggedFrame = report.flaggedFrame }
                // A nested container's reasons already name their entry.
                let nested = staged.type.kind == .container
                return verdict(flagged: analysis) { nested ? $0 : "\($0) in \(name)" }
            }
            if let nestedEntries { nestedEntries.forEach(record) } else {
                record(ContainerEntry(name: name, type: staged.type, isSensitive: false, reasons: [], error: report.failure?.message))
            }
            tellProgress(Double(reader.position) / Double(max(1, file.identity.size)))
        }
        try file.verifyUnchanged()
        return verdict()
    }

    /// The current entry's first `limit` bytes as text (the rest passed over).
    static func readSmall(_ reader: ArchiveReader, limit: Int) throws(MediaError) -> String {
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: limit, alignment: 16)
        defer { buffer.deallocate() }
        let count = try reader.readFully(buffer, count: limit)
        try reader.discard()
        return String(decoding: UnsafeRawBufferPointer(start: buffer, count: count), as: UTF8.self)
    }

    /// The current entry's bytes in a memory file (memfd, never on disk), when its first bytes say it is a
    /// picture, a video or a container; nil (and the entry passed over) when they do not.
    static func stage(_ reader: ArchiveReader, limits: MediaLimits, name: String) throws(MediaError) -> (descriptor: Int32, type: MediaType)? {
        let chunk = 1 << 16
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        // The head: as much as sniffing needs (one read may return less); it stays in the buffer.
        let headCount = try reader.readFully(buffer, count: MediaType.sniffLength)
        let type = MediaType.sniff(UnsafeRawBufferPointer(start: buffer, count: headCount))
        guard type.kind != .other else {
            try reader.discard()
            return nil
        }
        let cap = type.kind == .image ? Int64(limits.maxImageFileBytes) : limits.containers.maxEntryBytes
        let fd = qsys_memfd("container-entry")
        guard fd >= 0 else { throw MediaError(.io, "could not make room for an entry (\(name))", cause: String(cString: strerror(errno)), operation: "memfd_create") }
        var total = Int64(0)
        func write(_ bytes: UnsafeRawPointer, _ count: Int) throws(MediaError) {
            total += Int64(count)
            guard total <= cap else {
                throw MediaError(.fileTooLarge, "has an entry (\(name)) over \(cap >> 20) MiB, too large to check inside a container", path: reader.path)
            }
            var done = 0
            while done < count {
                let n = Glibc.write(fd, bytes + done, count - done)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw MediaError(.io, "could not copy an entry (\(name)) into memory", cause: String(cString: strerror(errno)), operation: "write") }
                done += n
            }
        }
        do throws(MediaError) {
            try write(buffer, headCount)
            while true {
                let n = try reader.read(buffer, count: chunk)
                if n == 0 { break }
                try write(buffer, n)
            }
        } catch {
            close(fd)
            throw error
        }
        return (fd, type)
    }

    /// Judges one staged entry as a file would be (a picture, a video, a container one level
    /// deeper), by a key only this walk uses.
    func judge(_ descriptor: Int32, type: MediaType, name: String, key: String) async throws -> FileReport {
        guard MediaFile.PassedDescriptors.add(descriptor, for: key) else { throw MediaError(.io, "could not hand an entry (\(name)) to the analysis", path: path) }
        defer { MediaFile.PassedDescriptors.remove(key) }
        let inner = SensitivityAnalyzer.ContainerContext(depth: context.depth, budget: context.budget, prefix: name + "/", top: context.top)
        var report = await SensitivityAnalyzer.$container.withValue(inner) {
            await analyzer.report(forFileAt: key, policy: policy, videoOptions: options, progress: nil)
        }
        // Messages name the entry, never the key.
        if var failure = report.failure {
            failure.message = failure.message.replacingOccurrences(of: key, with: "\(name) in \(context.top)")
            report.failure = failure
            if failure.code == MediaError.Code.containerLimit.rawValue || failure.code == MediaError.Code.encrypted.rawValue {
                // The whole container's bound, or a password: nothing after it can be trusted to be seen.
                throw failure
            }
            outcome.withLock { if $0.firstFailure == nil { $0.firstFailure = failure } }
        }
        return report
    }

    // MARK: - PDF

    func pdf() async throws -> SensitivityAnalysis {
        let budget = context.budget
        let document = try await analyzer.videoPool.run { [file] in try PDFDocument(descriptor: file.descriptor, path: file.path) }
        let plan = budget.limits.pagePlan(count: document.pageCount)
        let longSide = SensitivityAnalyzer.shrinkFloorFactor * NudeDetector.inputSize
        for (done, page) in plan.enumerated() {
            try Task.checkCancellation()
            let found = try await analyzer.pool.run { [analyzer, policy, file] () throws -> (SensitivityAnalysis, RGBImage, String)? in
                try budget.countEntry(path: file.path)
                let area = try document.pageArea(page)
                let image = try document.render(page, area: area, longSide: longSide)
                let whole = try analyzer.analyze(DecodedImage(image: image, originalWidth: image.width, originalHeight: image.height, type: .pdf),
                                                 path: file.path, identity: file.identity, policy: policy)
                if whole.isSensitive { return (whole, image, "on page \(page + 1)") }
                // Each image large enough to matter, drawn on its own at the models' size: a
                // picture drawn small on a page is still seen whole. One that fills most of the
                // page was just seen with it.
                let pageSize = area.width * area.height
                for region in try document.imageAreas(page, limit: 16) where region.width * region.height < pageSize / 2
                    && min(region.width, region.height) >= 24 {
                    try budget.checkTime(path: file.path)
                    let drawn = try document.render(page, area: region, longSide: longSide)
                    let part = try analyzer.analyze(DecodedImage(image: drawn, originalWidth: drawn.width, originalHeight: drawn.height, type: .pdf),
                                                    path: file.path, identity: file.identity, policy: policy)
                    if part.isSensitive { return (part, drawn, "in an image on page \(page + 1)") }
                }
                return nil
            }
            if let (flagged, image, place) = found {
                outcome.withLock { $0.flaggedFrame = image }
                var analysis = verdict(flagged: flagged) { "\($0) \(place)" }
                analysis.pages = document.pageCount
                analysis.pagesJudged = done + 1
                analysis.coverage = Double(done + 1) / Double(max(1, document.pageCount))
                return analysis
            }
            tellProgress(Double(done + 1) / Double(max(1, plan.count)))
            // Poppler's and cairo's buffers for a page are freed between pages, but glibc keeps
            // them resident (its mmap threshold rises with each large free): measured on a
            // 100-page PDF of photos, peak 418 MB without this, 200 MB with it.
            _ = qsys_release_free_memory()
        }
        try file.verifyUnchanged()
        var analysis = verdict()
        analysis.pages = document.pageCount
        analysis.pagesJudged = plan.count
        analysis.coverage = Double(plan.count) / Double(max(1, document.pageCount))
        return analysis
    }
}
