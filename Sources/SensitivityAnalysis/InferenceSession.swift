import COnnxRuntime
#if canImport(Glibc)
import Glibc
#endif

/// One loaded model with one float input and one float output. ORT allows concurrent `Run`
/// calls on a session, so one instance is shared by every worker.
public final class InferenceSession: @unchecked Sendable {
    public let runtime: OnnxRuntime
    public let inputName: String
    public let outputName: String
    /// Declared shapes; -1 marks a dynamic dimension.
    public let inputShape: [Int64]
    public let outputShape: [Int64]
    let session: OpaquePointer

    /// Whether the session was made from the model's optimised copy (``OptimizedModelCopy``).
    public let fromOptimizedCopy: Bool
    /// The optimised copy the session was made from, mapped: the session reads its graph there,
    /// so the bytes are unmapped only after the session is released (the deinit's body runs first).
    let modelBytes: MappedModelBytes?

    /// Loads `modelPath` with `intraOpThreads` threads per run (0: ORT decides).
    ///
    /// With `optimizedCopy`, from the model's optimised copy when one is there and vouched for;
    /// otherwise from the model, writing the copy for the next session where this process may.
    /// `doctor` passes false: it checks that the model itself loads.
    public init(runtime: OnnxRuntime, modelPath: String, intraOpThreads: Int, optimizedCopy: Bool = true) throws(InferenceError) {
        self.runtime = runtime
        let api = runtime.api
        let copy = optimizedCopy ? OptimizedModelCopy(modelPath: modelPath, runtimeVersion: runtime.version) : nil
        var session: OpaquePointer? = nil
        var mapped: MappedModelBytes? = nil
        if let copy, let bytes = copy.mappedIfVouchedFor() {
            let options = try InferenceSessionOptions(runtime: runtime, intraOpThreads: intraOpThreads)
            try options.set("session.load_model_format", "ORT")
            // The graph is read where it lies in the mapped copy, not from a buffer the runtime
            // reads the file into; the weights are still copied out, aligned, as from a file
            // (docs/performance.md, "Loading the models").
            try options.set("session.use_ort_model_bytes_directly", "1")
            if (try? runtime.check(qort_create_session_from_array(api, runtime.env, bytes.base, bytes.count, options.options, &session), "CreateSessionFromArray")) == nil {
                session = nil
            } else {
                // The pages the load touched (the weights it copied) need not stay resident: they
                // are the file's, unchanged, and come back from it if the runtime reads them again.
                madvise(bytes.base, bytes.count, MADV_DONTNEED)
                mapped = bytes
            }
        }
        modelBytes = mapped
        fromOptimizedCopy = session != nil
        if fromOptimizedCopy { copy?.removeLeftovers() }
        if session == nil, let copy, copy.canWrite {
            // From the model, the runtime writing the copy as it goes; put in place once whole.
            let temporary = copy.temporaryPath()
            let options = try InferenceSessionOptions(runtime: runtime, intraOpThreads: intraOpThreads)
            try options.writeOptimizedModel(to: temporary)
            if (try? runtime.check(qort_create_session(api, runtime.env, modelPath, options.options, &session), "CreateSession")) == nil {
                session = nil
                unlink(temporary)
            } else {
                copy.install(from: temporary)
            }
        }
        if session == nil {
            let options = try InferenceSessionOptions(runtime: runtime, intraOpThreads: intraOpThreads)
            do {
                try runtime.check(qort_create_session(api, runtime.env, modelPath, options.options, &session), "CreateSession")
            } catch {
                throw InferenceError(.modelUnexpected, "the model \(modelPath) could not be loaded", cause: error.cause, operation: error.operation)
            }
        }
        self.session = session!

        var allocator: OpaquePointer? = nil
        try runtime.check(qort_default_allocator(api, &allocator), "GetAllocatorWithDefaultOptions")
        func name(_ input: Bool) throws(InferenceError) -> String {
            var raw: UnsafeMutablePointer<CChar>? = nil
            try runtime.check(input ? qort_session_input_name(api, session, 0, allocator, &raw) : qort_session_output_name(api, session, 0, allocator, &raw),
                              input ? "SessionGetInputName" : "SessionGetOutputName")
            defer { _ = qort_allocator_free(api, allocator, raw) }
            return String(cString: raw!)
        }
        func shape(_ input: Bool) throws(InferenceError) -> [Int64] {
            var typeInfo: OpaquePointer? = nil
            try runtime.check(input ? qort_session_input_type_info(api, session, 0, &typeInfo) : qort_session_output_type_info(api, session, 0, &typeInfo),
                              input ? "SessionGetInputTypeInfo" : "SessionGetOutputTypeInfo")
            defer { qort_release_type_info(api, typeInfo) }
            var tensorInfo: OpaquePointer? = nil
            try runtime.check(qort_cast_type_info_to_tensor_info(api, typeInfo, &tensorInfo), "CastTypeInfoToTensorInfo")
            var elementType: Int32 = 0
            try runtime.check(qort_tensor_element_type(api, tensorInfo, &elementType), "GetTensorElementType")
            guard elementType == Int32(QORT_FLOAT) else {
                throw InferenceError(.modelUnexpected, "\(modelPath) has a non-float \(input ? "input" : "output") (element type \(elementType))")
            }
            var count = 0
            try runtime.check(qort_dimensions_count(api, tensorInfo, &count), "GetDimensionsCount")
            var dims = [Int64](repeating: 0, count: count)
            try runtime.check(qort_dimensions(api, tensorInfo, &dims, count), "GetDimensions")
            return dims
        }
        self.inputName = try name(true)
        self.outputName = try name(false)
        self.inputShape = try shape(true)
        self.outputShape = try shape(false)
    }

    deinit { qort_release_session(runtime.api, session) }

    /// Runs the model on one input tensor of `shape` and returns the output tensor's values.
    ///
    /// ORT reads the input through a pointer to `input`'s storage, so the tensor is created, run
    /// and its output copied out inside one `withUnsafeMutableBytes` scope: the pointer is never
    /// used after that scope ends.
    public func run(_ input: inout [Float], shape: [Int64]) throws(InferenceError) -> [Float] {
        let expected = shape.reduce(1, *)
        precondition(Int64(input.count) == expected, "input has \(input.count) values for shape \(shape)")
        let result: Result<[Float], InferenceError> = input.withUnsafeMutableBytes { raw in
            do throws(InferenceError) { return .success(try run(borrowing: raw, shape: shape)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// The body of ``run(_:shape:)``: `raw` is valid for the whole call and no longer.
    private func run(borrowing raw: UnsafeMutableRawBufferPointer, shape: [Int64]) throws(InferenceError) -> [Float] {
        let api = runtime.api
        var value: OpaquePointer? = nil
        try runtime.check(qort_create_tensor_with_data(api, runtime.memoryInfo, raw.baseAddress, raw.count, shape, shape.count, Int32(QORT_FLOAT), &value),
                          "CreateTensorWithDataAsOrtValue")
        defer { qort_release_value(api, value) }
        var output: OpaquePointer? = nil
        let ran = inputName.withCString { inName in
            outputName.withCString { outName in
                var inNames: [UnsafePointer<CChar>?] = [inName]
                var outNames: [UnsafePointer<CChar>?] = [outName]
                var inputs: [OpaquePointer?] = [value]
                return qort_run(api, session, nil, &inNames, &inputs, 1, &outNames, 1, &output)
            }
        }
        try runtime.check(ran, "Run")
        defer { qort_release_value(api, output) }
        var info: OpaquePointer? = nil
        try runtime.check(qort_tensor_type_and_shape(api, output, &info), "GetTensorTypeAndShape")
        defer { qort_release_tensor_info(api, info) }
        var count = 0
        try runtime.check(qort_dimensions_count(api, info, &count), "GetDimensionsCount")
        var dims = [Int64](repeating: 0, count: count)
        try runtime.check(qort_dimensions(api, info, &dims, count), "GetDimensions")
        let elements = Int(dims.reduce(1, *))
        var data: UnsafeMutableRawPointer? = nil
        try runtime.check(qort_tensor_mutable_data(api, output, &data), "GetTensorMutableData")
        guard let data, elements >= 0 else { throw InferenceError(.modelUnexpected, "the model returned no output data") }
        return Array(UnsafeBufferPointer(start: data.assumingMemoryBound(to: Float.self), count: elements))
    }
}
