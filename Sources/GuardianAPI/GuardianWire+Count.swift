import Foundation

extension GuardianWire {
    /// `count`: how many items the vault holds, and how many it held, by state.
    public struct Count: GuardianRequest {
        public static let verb = GuardianVerb.count
        public static let fields: Set<String> = []
        public init() {}
        public struct Answer: Codable, Sendable, Equatable {
            /// Items by state ("quarantined", "sealed", "released", "blocked", "purged", ...);
            /// a state no item is in is left out.
            public var byStatus: [String: Int]
            /// Items still in the vault (quarantined or sealed).
            public var inVault: Int
            /// Open release requests (the child asked a grown-up for them back).
            public var askedBack: Int
            public init(byStatus: [String: Int], inVault: Int, askedBack: Int) {
                self.byStatus = byStatus
                self.inVault = inVault
                self.askedBack = askedBack
            }
        }
    }
}
