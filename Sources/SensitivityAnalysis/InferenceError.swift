/// An error from the inference side: the runtime, a model file, or a call into ONNX Runtime.
public struct InferenceError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, Codable {
        case runtimeMissing = "runtime_missing"
        case runtimeUnloadable = "runtime_unloadable"
        case modelMissing = "model_missing"
        case modelMismatch = "model_hash_mismatch"
        case modelUnexpected = "model_unexpected_shape"
        case runtimeCall = "onnxruntime_error"
    }

    public var code: Code
    public var message: String
    /// ONNX Runtime's own message, or the system's.
    public var cause: String?
    /// The ORT function (or step) that failed.
    public var operation: String?

    public init(_ code: Code, _ message: String, cause: String? = nil, operation: String? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
        self.operation = operation
    }

    public var description: String {
        guard let cause, !cause.isEmpty else { return message }
        return "\(message) (\(operation.map { "\($0): " } ?? "")\(cause))"
    }
}
