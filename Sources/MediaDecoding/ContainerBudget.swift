import Foundation

/// What one container (nested ones included) has spent so far against its ``ContainerLimits``.
///
/// One budget is shared by a container and everything inside it; it is used by one thread at a
/// time (the container's walk moves between the analysis threads, never runs on two at once).
public final class ContainerBudget: @unchecked Sendable {
    public let limits: ContainerLimits
    /// Entries seen.
    public private(set) var entries = 0
    /// Bytes decompressed.
    public private(set) var expanded: Int64 = 0
    /// Bytes of the file itself read so far (the ratio's denominator).
    public var consumed: Int64 = 0
    let deadline: ContinuousClock.Instant

    public init(limits: ContainerLimits) {
        self.limits = limits
        self.deadline = .now + .seconds(limits.maxSeconds)
    }

    /// One more entry (or page).
    public func countEntry(path: String) throws(MediaError) {
        entries += 1
        if entries > limits.maxEntries {
            throw MediaError(.containerLimit, "has more than \(limits.maxEntries) entries (the limit of containers.entries)", path: path)
        }
        try checkTime(path: path)
    }

    /// `count` more bytes decompressed.
    public func expand(by count: Int64, path: String) throws(MediaError) {
        expanded += count
        if expanded > limits.maxExpandedBytes {
            throw MediaError(.containerLimit, "expands to more than \(limits.maxExpandedBytes >> 20) MiB (the limit of containers.expanded_mib)", path: path)
        }
        if expanded > limits.ratioFloorBytes, expanded / max(1, consumed) > Int64(limits.maxExpansionRatio) {
            throw MediaError(.containerLimit, "expands \(expanded / max(1, consumed)) times (\(expanded >> 20) MiB from \(max(1, consumed >> 10)) KiB), "
                             + "over the limit of \(limits.maxExpansionRatio) (containers.ratio): refused as a likely archive bomb", path: path)
        }
        if expanded & 0xFFFFF < count { try checkTime(path: path) }
    }

    /// Throws once the container's time is up.
    public func checkTime(path: String) throws(MediaError) {
        if ContinuousClock.now > deadline {
            throw MediaError(.containerLimit, "took longer than \(limits.maxSeconds) s to check (the limit of containers.seconds)", path: path)
        }
    }
}
