// `quarantine-bench formats FILE...`: for each picture, the time of its library's own decode
// (libheif, libjxl or libwebp's animation decoder, called directly to full-size pixels, the way
// their command-line tools do before writing a file) plus one inference of both models for
// every image quarantine judges in it, against `quarantine`'s whole analysis of the file. One
// JSON line per file; medians of `reps` runs.
import CHeif
import CJXL
import CWebP
import Foundation
import MediaDecoding
import SensitivityAnalysis

enum LibraryDecode {
    /// Decodes every picture the library would show of `bytes` to full-size 8-bit pixels.
    static func run(_ bytes: [UInt8], type: MediaType) throws -> Int {
        switch type {
        case .heif, .avif:
            let context = heif_context_alloc()
            defer { heif_context_free(context) }
            guard bytes.withUnsafeBytes({ heif_context_read_from_memory(context, $0.baseAddress, $0.count, nil) }).code == heif_error_Ok else { throw Failure("libheif cannot read it") }
            var handle: OpaquePointer?
            _ = heif_context_get_primary_image_handle(context, &handle)
            defer { heif_image_handle_release(handle) }
            var image: OpaquePointer?
            guard heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGB, nil).code == heif_error_Ok else { throw Failure("libheif cannot decode it") }
            heif_image_release(image)
            return 1
        case .jxl:
            let decoder = JxlDecoderCreate(nil)
            defer { JxlDecoderDestroy(decoder) }
            _ = JxlDecoderSubscribeEvents(decoder, Int32(JXL_DEC_FULL_IMAGE.rawValue))
            var format = JxlPixelFormat(num_channels: 3, data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
            var buffer: [UInt8] = []
            var frames = 0
            return try bytes.withUnsafeBufferPointer { input in
                _ = JxlDecoderSetInput(decoder, input.baseAddress, input.count)
                JxlDecoderCloseInput(decoder)
                while true {
                    switch JxlDecoderProcessInput(decoder) {
                    case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
                        var size = 0
                        _ = JxlDecoderImageOutBufferSize(decoder, &format, &size)
                        if buffer.count != size { buffer = [UInt8](repeating: 0, count: size) }
                        _ = buffer.withUnsafeMutableBytes { JxlDecoderSetImageOutBuffer(decoder, &format, $0.baseAddress, $0.count) }
                    case JXL_DEC_FULL_IMAGE: frames += 1
                    case JXL_DEC_SUCCESS: return frames
                    default: throw Failure("libjxl cannot decode it")
                    }
                }
            }
        case .webp:
            return try bytes.withUnsafeBufferPointer { buffer in
                var data = WebPData(bytes: buffer.baseAddress, size: buffer.count)
                var options = WebPAnimDecoderOptions()
                _ = WebPAnimDecoderOptionsInit(&options)
                options.color_mode = MODE_RGBA
                guard let decoder = WebPAnimDecoderNew(&data, &options) else { throw Failure("libwebp cannot read it") }
                defer { WebPAnimDecoderDelete(decoder) }
                var frames = 0
                while WebPAnimDecoderHasMoreFrames(decoder) != 0 {
                    var canvas: UnsafeMutablePointer<UInt8>?
                    var timestamp: Int32 = 0
                    guard WebPAnimDecoderGetNext(decoder, &canvas, &timestamp) != 0 else { throw Failure("libwebp cannot decode frame \(frames + 1)") }
                    frames += 1
                }
                return frames
            }
        default:
            throw Failure("no library decode is measured for \(type.rawValue)")
        }
    }

    struct Failure: Error, CustomStringConvertible { let description: String; init(_ d: String) { description = d } }
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

func timed(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
}

func benchFormats(_ files: [String], reps: Int) async throws {
    let catalog = ModelCatalog.standard()
    let runtime = try OnnxRuntime(path: try catalog.verified(ModelCatalog.runtime))
    let models = try SensitivityModels.all.map { model in
        (session: try InferenceSession(runtime: runtime, modelPath: try catalog.verified(model.artifact), intraOpThreads: 1), shape: model.inputShape)
    }
    var inputs = models.map { [Float](repeating: 0, count: Int($0.shape.reduce(1, *))) }
    func inferOnce() throws { for (i, model) in models.enumerated() { _ = try model.session.run(&inputs[i], shape: model.shape) } }
    try inferOnce()
    let inference = median(try (0..<max(reps, 5)).map { _ in try timed { try inferOnce() } })
    let analyzer = try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 1))
    let judged = ImageDecoder(minimumLongSide: SensitivityAnalyzer.shrinkFloorFactor * 320, minimumShortSide: SensitivityAnalyzer.shrinkFloorFactor * 256)
    for path in files {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let type = MediaType.sniff(bytes)
        let frames = try LibraryDecode.run(bytes, type: type)
        let images = try judged.decodeAll(try MediaFile(path: path)).count
        let library = median(try (0..<reps).map { _ in try timed { _ = try LibraryDecode.run(bytes, type: type) } })
        var ours: [Double] = []
        var verdict = ""
        for _ in 0..<reps {
            let start = DispatchTime.now().uptimeNanoseconds
            let report = await analyzer.report(forFileAt: path)
            ours.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            verdict = report.failure.map { "error: \($0.message)" } ?? (report.isSensitive ? "flagged" : "clean")
        }
        let floor = library + Double(images) * inference
        let line: [String: Any] = [
            "what": "format", "file": (path as NSString).lastPathComponent, "type": type.rawValue, "frames": frames, "images_judged": images,
            "library_decode_ms": (library * 10).rounded() / 10, "inference_ms": (inference * 10).rounded() / 10,
            "floor_ms": (floor * 10).rounded() / 10, "quarantine_ms": (median(ours) * 10).rounded() / 10,
            "ratio": (median(ours) / floor * 100).rounded() / 100, "verdict": verdict,
        ]
        print(String(decoding: try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]), as: UTF8.self))
    }
}
