import MediaDecoding

/// One picture or video judged inside a container, as `scan --json` lists it.
public struct ContainerEntry: Sendable, Codable, Equatable {
    /// Its name in the container (nested ones: `inner.zip/photos/a.jpg`).
    public var name: String
    public var type: MediaType
    public var isSensitive: Bool
    public var reasons: [String]
    /// Why it could not be judged, when it could not.
    public var error: String?

    public init(name: String, type: MediaType, isSensitive: Bool, reasons: [String], error: String? = nil) {
        self.name = name
        self.type = type
        self.isSensitive = isSensitive
        self.reasons = reasons
        self.error = error
    }
}
