import Foundation
import MediaDecoding
import QuarantineStore
import SensitivityAnalysis

/// What hold-while-checking adds to a clean file's path, beside the analysis itself: the
/// `Holding` steps the core runs, on a real audit database and a folder on the same disk.
enum HoldBench {
    static func run(file: String, reps: Int) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-hold-bench-\(getpid())").path
        try FileManager.default.createDirectory(atPath: folder + "/Downloads", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try AuditStore(path: folder + "/audit.sqlite3")
        let holding = Holding(store: store)
        let path = folder + "/Downloads/" + URL(fileURLWithPath: file).lastPathComponent
        try FileManager.default.copyItem(atPath: file, toPath: path)
        var hold: [Double] = [], back: [Double] = []
        func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
        for _ in 0..<reps {
            let t0 = now()
            let held = try holding.hold(path: path, root: folder + "/Downloads")
            let t1 = now()
            // What the core records for the clean verdict while it is held (not counted: it is
            // recorded without holding too), then the put-back with its carried-over record.
            let identity = FileIdentity(statAt: holding.path(of: held))!
            try store.markSeen(SeenFile(path: path, identity: identity, sha256: nil, mode: .child, verdict: .clean))
            let t2 = now()
            let returned = try holding.putBack(held)
            try store.carrySeen(from: path, identity: identity, to: returned.path, identity: returned.identity)
            let t3 = now()
            hold.append(Double(t1 - t0) / 1e6)
            back.append(Double(t3 - t2) / 1e6)
        }
        let total = zip(hold, back).map { $0 + $1 }
        func percentile(_ values: [Double], _ p: Double) -> Double {
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
        }
        func ms(_ value: Double) -> String { String(format: "%.2f", value) }
        return "{\"bench\":\"hold\",\"reps\":\(reps),\"size\":\((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0),"
            + "\"hold_ms_p50\":\(ms(percentile(hold, 0.5))),\"hold_ms_p95\":\(ms(percentile(hold, 0.95))),"
            + "\"back_ms_p50\":\(ms(percentile(back, 0.5))),\"back_ms_p95\":\(ms(percentile(back, 0.95))),"
            + "\"added_ms_p50\":\(ms(percentile(total, 0.5))),\"added_ms_p95\":\(ms(percentile(total, 0.95))),\"target_ms_p95\":50}"
    }
}
