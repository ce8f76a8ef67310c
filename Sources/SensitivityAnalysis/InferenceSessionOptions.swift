import COnnxRuntime

/// The options every ``InferenceSession`` is created with: threads, sequential execution, full
/// graph optimisation, no memory arena, and thread pools that never spin.
///
/// ONNX Runtime's intra-op pool spins by default (`session.intra_op.allow_spinning`): a worker
/// thread that runs out of work busy-waits for more before it sleeps. With one intra-op thread
/// (the default) there is no pool and nothing spins; with more, spinning doubled the CPU time
/// per picture on 2 shared cores (measured: 320n.onnx with 2 intra-op threads, 43-47 ms CPU per
/// picture spinning, 24-25 ms without, 23.5 ms with one thread; docs/performance.md, "Threads").
/// A background program must not burn a core waiting, so both pools are told not to spin.
public final class InferenceSessionOptions: @unchecked Sendable {
    /// The configuration entries set on every session, by ONNX Runtime's key.
    public static let configEntries: [(key: String, value: String)] = [
        ("session.intra_op.allow_spinning", "0"),
        ("session.inter_op.allow_spinning", "0"),
    ]

    let runtime: OnnxRuntime
    let options: OpaquePointer

    /// Options for runs on `intraOpThreads` threads (0: ORT decides; 1: the calling thread only).
    public init(runtime: OnnxRuntime, intraOpThreads: Int) throws(InferenceError) {
        self.runtime = runtime
        let api = runtime.api
        var options: OpaquePointer? = nil
        try runtime.check(qort_create_session_options(api, &options), "CreateSessionOptions")
        self.options = options!
        try runtime.check(qort_set_intra_op_threads(api, options, Int32(intraOpThreads)), "SetIntraOpNumThreads")
        try runtime.check(qort_set_inter_op_threads(api, options, 1), "SetInterOpNumThreads")
        try runtime.check(qort_set_execution_mode(api, options, Int32(QORT_EXEC_SEQUENTIAL)), "SetSessionExecutionMode")
        // Full graph optimisation: "basic" or "extended" halve the speed on this CPU (measured:
        // 12.4 vs 20.9 pictures/s). No memory arena: the same speed, 40 MB less peak memory.
        try runtime.check(qort_set_graph_optimization_level(api, options, Int32(QORT_OPT_ALL)), "SetSessionGraphOptimizationLevel")
        try runtime.check(qort_disable_cpu_mem_arena(api, options), "DisableCpuMemArena")
        for entry in Self.configEntries { try set(entry.key, entry.value) }
    }

    deinit { qort_release_session_options(runtime.api, options) }

    /// Sets configuration entry `key` (ONNX Runtime's name) to `value`.
    func set(_ key: String, _ value: String) throws(InferenceError) {
        try runtime.check(qort_add_session_config_entry(runtime.api, options, key, value), "AddSessionConfigEntry")
    }

    /// Sessions made with these options from a `.onnx` file write their optimised graph to `path`,
    /// in ONNX Runtime's own format (``OptimizedModelCopy``).
    func writeOptimizedModel(to path: String) throws(InferenceError) {
        try set("session.save_model_format", "ORT")
        try runtime.check(qort_set_optimized_model_path(runtime.api, options, path), "SetOptimizedModelFilePath")
    }

    /// The value ONNX Runtime holds for configuration `key`, or nil when it is not set.
    public func entry(_ key: String) -> String? {
        let api = runtime.api
        var size = 0
        // Asking with no buffer fails and gives the size needed (terminator included).
        if let status = qort_get_session_config_entry(api, options, key, nil, &size) { qort_release_status(api, status) }
        guard size > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: size)
        guard (try? runtime.check(qort_get_session_config_entry(api, options, key, &buffer, &size), "GetSessionConfigEntry")) != nil else { return nil }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
