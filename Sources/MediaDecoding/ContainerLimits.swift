/// What a container (an archive, a zip-based document, a PDF) may cost before it is refused.
///
/// A hostile container must cost little: every bound is checked while it is read, never after,
/// so a zip bomb is refused after a few MiB of output. Going over one is a ``MediaError`` with
/// the code `container_limit`, which `on_error` decides like any file that cannot be checked.
public struct ContainerLimits: Sendable, Equatable, Codable {
    /// Entries read from one archive, nested ones included (directories count too).
    public var maxEntries: Int
    /// Bytes decompressed from one container, nested ones included.
    public var maxExpandedBytes: Int64
    /// Decompressed bytes per byte of the container read so far; checked once
    /// ``ratioFloorBytes`` have been decompressed (a small file may expand a lot harmlessly).
    public var maxExpansionRatio: Int
    /// Below this many decompressed bytes the ratio is not checked.
    public var ratioFloorBytes: Int64
    /// Containers inside containers: the file itself is depth 0.
    public var maxDepth: Int
    /// The largest video (or nested container) entry copied into memory to be judged; pictures
    /// are bounded by ``MediaLimits/maxImageFileBytes``.
    public var maxEntryBytes: Int64
    /// PDF pages judged: every page of the first ``pdfAllPages``, then an even spread over the
    /// rest up to this many in all (coverage is reported, as for videos).
    public var maxPages: Int
    /// Every page up to here is judged.
    public var pdfAllPages: Int
    /// Seconds for one container, nested ones included.
    public var maxSeconds: Int

    public init(maxEntries: Int = 10_000, maxExpandedBytes: Int64 = 2 << 30, maxExpansionRatio: Int = 100, ratioFloorBytes: Int64 = 32 << 20,
                maxDepth: Int = 3, maxEntryBytes: Int64 = 512 << 20, maxPages: Int = 300, pdfAllPages: Int = 200, maxSeconds: Int = 600) {
        self.maxEntries = maxEntries
        self.maxExpandedBytes = maxExpandedBytes
        self.maxExpansionRatio = maxExpansionRatio
        self.ratioFloorBytes = ratioFloorBytes
        self.maxDepth = maxDepth
        self.maxEntryBytes = maxEntryBytes
        self.maxPages = maxPages
        self.pdfAllPages = pdfAllPages
        self.maxSeconds = maxSeconds
    }

    /// The pages of a `count`-page document that are judged, in order: all of the first
    /// ``pdfAllPages``, then an even spread over the rest, ``maxPages`` at most.
    public func pagePlan(count: Int) -> [Int] {
        guard count > 0 else { return [] }
        let all = min(count, max(0, min(pdfAllPages, maxPages)))
        var pages = Array(0..<all)
        let rest = count - all, budget = max(0, maxPages - all)
        guard rest > 0, budget > 0 else { return pages }
        if rest <= budget { return Array(0..<count) }
        for k in 0..<budget {
            // The k-th of `budget` evenly spaced pages of the rest, the last one included.
            let page = all + (budget == 1 ? rest - 1 : k * (rest - 1) / (budget - 1))
            if page != pages.last { pages.append(page) }
        }
        return pages
    }
}
