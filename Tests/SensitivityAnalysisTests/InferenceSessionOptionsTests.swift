import QuarantineBase
import SensitivityAnalysis
import Testing

/// The options every model session is created with, as ONNX Runtime itself holds them.
@Suite("inference session options")
struct InferenceSessionOptionsTests {
    @Test("no thread pool spins: ONNX Runtime holds allow_spinning 0 for the intra-op and the inter-op pool, whatever the thread count")
    func poolsDoNotSpin() throws {
        let runtime = try OnnxRuntime(path: try #require(ModelCatalog.standard().locate(ModelCatalog.runtime)))
        for threads in [0, 1, 2] {
            let options = try InferenceSessionOptions(runtime: runtime, intraOpThreads: threads)
            #expect(options.entry("session.intra_op.allow_spinning") == "0", "\(threads) threads")
            #expect(options.entry("session.inter_op.allow_spinning") == "0", "\(threads) threads")
            #expect(options.entry("session.no.such.key") == nil)
        }
    }
}
