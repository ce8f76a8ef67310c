extension GuardianWire {
    /// `reveal`: the original of one item, as an open descriptor passed with the answer, for
    /// the review page's Show. The core's consent for ``ProtectedAction/show`` decides (in child
    /// mode the guardian PIN); nothing on disk changes, the audit log records it.
    public struct Reveal: GuardianRequest {
        public static let verb = GuardianVerb.reveal
        public static let fields: Set<String> = ["id", "pin"]
        public var id: Int64
        /// The guardian PIN, when the caller's consent needs it (child mode).
        public var pin: String?
        public init(id: Int64, pin: String? = nil) {
            self.id = id
            self.pin = pin
        }
        public struct Answer: Codable, Sendable, Equatable {
            /// The original file's name.
            public var name: String
            public var size: Int64
            public init(name: String, size: Int64) {
                self.name = name
                self.size = size
            }
        }
    }
}
