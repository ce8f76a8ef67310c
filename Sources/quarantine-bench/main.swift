// quarantine-bench: the "floor" of `make bench`: what analysing a folder would cost with nothing
// but decoding (turbojpeg DCT-scaled, ffmpeg for other formats) and raw ONNX Runtime inference of
// both models on ready-made tensors. `quarantine scan` is compared against it in the same run.
//
//   quarantine-bench floor [--workers N] [--intra-op-threads T] FOLDER   -> one JSON line
//   quarantine-bench formats [--reps N] FILE...                         -> one JSON line a file
//   quarantine-bench hold [--reps N] FILE                                -> one JSON line: what holding
//       a file while it is checked adds (hold: record + rename aside; back: access time, rename
//       back, the seen record carried over), on a real database and folder beside FILE's copy
//   quarantine-bench testcard [--reps N] [--crops N] FOLDER...            -> one JSON line: the test
//       card check's time and margins on natural pictures and on the card placed over them
import Foundation
import MediaDecoding
import SensitivityAnalysis

func usage() -> Never {
    FileHandle.standardError.write(Data("usage: quarantine-bench floor [--workers N] [--intra-op-threads T] FOLDER | formats [--reps N] FILE... | video-decode [--infer] FILE [GAP] | hold [--reps N] FILE | testcard [--reps N] [--crops N] FOLDER...\n".utf8))
    exit(2)
}

MemoryTuning.apply()
var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "hold", arguments.count >= 2 {
    arguments.removeFirst()
    var reps = 200
    if arguments.first == "--reps", arguments.count > 1 { reps = Int(arguments[1]) ?? reps; arguments.removeFirst(2) }
    guard let file = arguments.first else { usage() }
    print(try HoldBench.run(file: file, reps: reps))
    exit(0)
}
// `video-decode [--infer] FILE [GAP]`: the sampler's own work on one thread (the plan an analysis
// follows: keyframes, then the stretches between them), as decode CPU time; with --infer, each
// analysed sample also judged by both models inline, their CPU time apart. The floor of a scan
// is (decode_cpu_s + inference_cpu_s) / cores.
if arguments.first == "video-decode", arguments.count >= 2 {
    arguments.removeFirst()
    let infer = arguments.first == "--infer"
    if infer { arguments.removeFirst() }
    guard let path = arguments.first else { usage() }
    let gap = arguments.count > 1 ? Double(arguments[1]) ?? 2 : 2
    let analyzer = try SensitivityAnalyzer(policy: .defaults(for: .adult), configuration: .init(workers: 1), videoOptions: VideoOptions(maxGap: gap))
    let result = try analyzer.benchmarkVideoDecoding(path: path, infer: infer)
    var fields = ["\"what\":\"video-decode\"", "\"samples\":\(result.samples)", "\"analysed\":\(result.analysed)",
                  "\"decode_cpu_s\":\(result.decodeCPUSeconds)", "\"wall_s\":\(result.wallSeconds)", "\"largest_gap\":\(result.largestGap)"]
    if let inference = result.inferenceCPUSeconds { fields.append("\"inference_cpu_s\":\(inference)") }
    if let coverage = result.coverage { fields.append("\"coverage\":\(coverage)") }
    print("{" + fields.joined(separator: ",") + "}")
    exit(0)
}
// `formats [--reps N] FILE...`: each picture against its library's own decode plus inference
// (Formats.swift).
if arguments.first == "formats" {
    arguments.removeFirst()
    var reps = 5
    if arguments.first == "--reps", arguments.count > 1 { reps = Int(arguments[1]) ?? reps; arguments.removeFirst(2) }
    try await benchFormats(arguments, reps: reps)
    exit(0)
}
// `testcard [--reps N] [--crops N] FOLDER...`: the test card check alone (CardBench.swift).
if arguments.first == "testcard" {
    try benchTestCard(Array(arguments.dropFirst()))
    exit(0)
}
guard arguments.first == "floor" else { usage() }
arguments.removeFirst()
var workers = ProcessInfo.processInfo.activeProcessorCount, intra = 1
var folder: String?
while let argument = arguments.first {
    arguments.removeFirst()
    switch argument {
    case "--workers": workers = Int(arguments.removeFirst()) ?? workers
    case "--intra-op-threads": intra = Int(arguments.removeFirst()) ?? intra
    default: folder = argument
    }
}
guard let folder else { usage() }

let files = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
    .filter { !$0.hasPrefix(".") }.sorted().map { folder + "/" + $0 }
let catalog = ModelCatalog.standard()
let runtime = try OnnxRuntime(path: try catalog.verified(ModelCatalog.runtime))
// Every model of the registry, each run once per picture on an input of its shape.
let models = try SensitivityModels.all.map { model in
    (session: try InferenceSession(runtime: runtime, modelPath: try catalog.verified(model.artifact), intraOpThreads: intra), shape: model.inputShape)
}
let factor = SensitivityAnalyzer.shrinkFloorFactor
let decoder = ImageDecoder(minimumLongSide: factor * 320, minimumShortSide: factor * 256)

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

final class Totals: @unchecked Sendable {
    let lock = NSLock()
    var images = 0, cardNanos: UInt64 = 0, cardChecks = 0, cardMaxNanos: UInt64 = 0
}
let totals = Totals()
let next = NSLock()
nonisolated(unsafe) var index = 0

let startWall = Date(), startCPU = cpuSeconds()
let done = DispatchSemaphore(value: 0)
for _ in 0..<workers {
    Thread.detachNewThread {
        defer { done.signal() }
        var inputs = models.map { [Float](repeating: 0, count: Int($0.shape.reduce(1, *))) }
        while true {
            next.lock()
            let i = index
            index += 1
            next.unlock()
            guard i < files.count else { return }
            guard let file = try? MediaFile(path: files[i]), file.type.kind == .image, let decoded = try? decoder.decode(file) else { continue }
            let t0 = DispatchTime.now().uptimeNanoseconds
            _ = TestCard.recognises(decoded.image)
            let card = DispatchTime.now().uptimeNanoseconds - t0
            for (index, model) in models.enumerated() { _ = try? model.session.run(&inputs[index], shape: model.shape) }
            totals.lock.lock()
            totals.images += 1
            totals.cardNanos += card
            totals.cardChecks += 1
            totals.cardMaxNanos = max(totals.cardMaxNanos, card)
            totals.lock.unlock()
        }
    }
}
for _ in 0..<workers { done.wait() }
let wall = Date().timeIntervalSince(startWall), cpu = cpuSeconds() - startCPU
var peak = rusage()
getrusage(RUSAGE_SELF.rawValue, &peak)
let result: [String: Any] = [
    "what": "floor", "images": totals.images, "workers": workers, "intra_op_threads": intra,
    "wall_s": (wall * 1000).rounded() / 1000, "cpu_s": (cpu * 1000).rounded() / 1000,
    "images_per_s": ((Double(totals.images) / wall) * 100).rounded() / 100,
    "cpu_ms_per_image": ((cpu * 1000 / Double(max(1, totals.images))) * 10).rounded() / 10,
    "peak_rss_mb": Double(peak.ru_maxrss) / 1024,
    "testcard_check_ms_mean": Double(totals.cardNanos) / Double(max(1, totals.cardChecks)) / 1e6,
    "testcard_check_ms_max": Double(totals.cardMaxNanos) / 1e6,
]
let data = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
print(String(decoding: data, as: UTF8.self))
