import COnnxRuntime

/// ONNX Runtime, opened with dlopen: the function table, one environment for the process and
/// a CPU memory description. Every ORT call goes through ``check(_:_:)``, which turns a
/// non-NULL `OrtStatus` into an ``InferenceError`` carrying ORT's message.
public final class OnnxRuntime: @unchecked Sendable {
    let api: UnsafePointer<QOrtApi>
    let env: OpaquePointer
    let memoryInfo: OpaquePointer
    /// The runtime's own version string, e.g. `1.31.1`.
    public let version: String
    public let path: String

    /// Loads the library at `path` and creates the process's environment.
    public init(path: String) throws(InferenceError) {
        var message = [CChar](repeating: 0, count: 1024)
        var versionPointer: UnsafePointer<CChar>? = nil
        guard let api = qort_load(path, UInt32(QORT_API_VERSION_USED), &message, message.count, &versionPointer) else {
            throw InferenceError(.runtimeUnloadable, "ONNX Runtime could not be loaded from \(path)", cause: message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }, operation: "dlopen")
        }
        self.api = api
        self.path = path
        self.version = versionPointer.map { String(cString: $0) } ?? "unknown"
        var env: OpaquePointer? = nil
        try Self.check(api, qort_create_env(api, Int32(QORT_LOG_ERROR), "quarantine", &env), "CreateEnv")
        // ONNX Runtime's platform telemetry is on by default; nothing of ours is reported anywhere.
        try Self.check(api, qort_disable_telemetry(api, env), "DisableTelemetryEvents")
        var info: OpaquePointer? = nil
        try Self.check(api, qort_create_cpu_memory_info(api, Int32(QORT_ARENA_ALLOCATOR), Int32(QORT_MEM_DEFAULT), &info), "CreateCpuMemoryInfo")
        self.env = env!
        self.memoryInfo = info!
    }

    deinit {
        qort_release_memory_info(api, memoryInfo)
        qort_release_env(api, env)
    }

    /// Throws if `status` is not NULL, releasing it.
    func check(_ status: OpaquePointer?, _ operation: String) throws(InferenceError) {
        try Self.check(api, status, operation)
    }

    static func check(_ api: UnsafePointer<QOrtApi>, _ status: OpaquePointer?, _ operation: String) throws(InferenceError) {
        guard let status else { return }
        let message = qort_error_message(api, status).map { String(cString: $0) } ?? "unknown ONNX Runtime error"
        qort_release_status(api, status)
        throw InferenceError(.runtimeCall, "ONNX Runtime failed", cause: message, operation: operation)
    }
}
