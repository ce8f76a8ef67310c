import CSystemShims

/// Process-wide allocator settings, applied by executables before they start threads.
public enum MemoryTuning {
    /// Caps glibc's malloc arenas at two. By default every thread that allocates (analysis
    /// workers, ONNX Runtime's, Swift's cooperative pool) may get its own arena, and freed decode
    /// buffers stay resident in each. Measured over 1,000 pictures: peak RSS 309 MB with the
    /// default, 224 MB with two arenas, at the same speed (docs/performance.md).
    ///
    /// Also starts malloc where glibc's own thresholds end up after the first large free (a
    /// buffer over the mmap threshold, 128 KiB at start, raises it to that buffer's size, at
    /// most 32 MiB on 64 bits, and the trim threshold to twice that): an mmap threshold of
    /// 32 MiB and a trim threshold of 64 MiB. Loading the models frees buffers of every size
    /// on the way there, each one mapped, zeroed by the kernel and unmapped again; started
    /// there, a process that loads the models spends less on it. Measured (release build): an
    /// analysis worker's start 516 -> 462 ms of CPU (mean of 10 interleaved runs); with the
    /// same thresholds given as `GLIBC_TUNABLES`, `quarantine scan` of an empty folder (models
    /// loaded at once, as then) 343 -> 288 ms (median of 8), and over 1,000 pictures the same
    /// CPU per picture and a peak RSS of 231-242 MB against 207-235 MB (two runs each; the
    /// target is under 300 MB). What a worker frees after its warm-up still goes back at once
    /// (`malloc_trim`).
    public static func apply() {
        _ = qsys_limit_malloc_arenas(2)
        _ = qsys_set_malloc_thresholds(mmapThreshold, trimThreshold)
    }

    /// 32 MiB: glibc's largest dynamic mmap threshold on 64 bits (DEFAULT_MMAP_THRESHOLD_MAX).
    public static let mmapThreshold = 32 << 20
    /// 64 MiB: twice the mmap threshold, as glibc sets it when it raises the mmap threshold.
    public static let trimThreshold = 64 << 20
}
