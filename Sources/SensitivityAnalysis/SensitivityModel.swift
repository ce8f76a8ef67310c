/// A model the analyzer runs: the pinned file it loads and the input tensor it takes. A new
/// model is one type conforming to this and its entry in ``SensitivityModels/all``; the pins
/// (``ModelCatalog/all``), `quarantine doctor` and the benchmark's floor derive from that list.
public protocol SensitivityModel {
    /// How people know it ("NudeNet 320n").
    static var displayName: String { get }
    /// The pinned file (``ModelCatalog``) it is loaded from.
    static var artifact: ModelCatalog.Artifact { get }
    /// The shape of its one float input for one picture.
    static var inputShape: [Int64] { get }
}

/// The registry of models, in the order they judge a picture.
public enum SensitivityModels {
    public static var all: [any SensitivityModel.Type] { [NudeDetector.self, NSFWClassifier.self] }
}

extension NudeDetector: SensitivityModel {
    public static var displayName: String { "NudeNet" }
    public static var artifact: ModelCatalog.Artifact { ModelCatalog.nudeNet }
    public static var inputShape: [Int64] { [1, 3, Int64(inputSize), Int64(inputSize)] }
}

extension NSFWClassifier: SensitivityModel {
    public static var displayName: String { "open_nsfw" }
    public static var artifact: ModelCatalog.Artifact { ModelCatalog.openNSFW }
    public static var inputShape: [Int64] { [1, Int64(cropSide), Int64(cropSide), 3] }
}
