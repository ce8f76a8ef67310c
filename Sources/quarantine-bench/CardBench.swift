import Foundation
import MediaDecoding
import SensitivityAnalysis

/// `quarantine-bench testcard [--reps N] [--crops N] [--list] FOLDER...`: the test card check on pictures
/// at analysis size (decoded as the analyzer decodes them): on each natural picture (and `--crops`
/// random crops of it), which must never be taken for the card, and on the card placed over it
/// (filling it; a quarter in each corner and the middle; a full-width strip; inside window chrome;
/// letterboxed),
/// as drawn, after JPEG at quality 50 and after halving, which must all be recognised.
/// One JSON line: times per check (ms; for each kind the median and the max over the pictures of
/// each picture's median, and of its slowest call by the clock and by CPU time), the strongest separation of a natural
/// picture, the weakest of a card, and every miss or false alarm. `--list`: each check's time on stderr.
func benchTestCard(_ arguments: [String]) throws {
    var arguments = arguments, reps = 15, crops = 0, list = false
    var folders: [String] = []
    while let argument = arguments.first {
        arguments.removeFirst()
        switch argument {
        case "--reps": reps = Int(arguments.removeFirst()) ?? reps
        case "--crops": crops = Int(arguments.removeFirst()) ?? crops
        case "--list": list = true
        default: folders.append(argument)
        }
    }
    let factor = SensitivityAnalyzer.shrinkFloorFactor
    let decoder = ImageDecoder(minimumLongSide: factor * 320, minimumShortSide: factor * 256)
    var times: [String: [Double]] = [:]
    var naturalStrongest = (separation: -Double.infinity, name: ""), cardWeakest = (separation: Double.infinity, name: "")
    var failures: [String] = [], checked: [String: Int] = [:]

    func time(_ image: RGBImage, _ kind: String) -> (TestCard.Frame?, Double) {
        var samples: [Double] = [], cpu: [Double] = []
        var found: TestCard.Frame?
        func threadCPU() -> Double {
            var t = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
            return Double(t.tv_sec) * 1e3 + Double(t.tv_nsec) / 1e6
        }
        for _ in 0..<reps {
            let c0 = threadCPU(), t0 = DispatchTime.now().uptimeNanoseconds
            found = TestCard.locate(image)
            samples.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
            cpu.append(threadCPU() - c0)
        }
        samples.sort()
        times[kind, default: []].append(samples[samples.count / 2])
        if list { FileHandle.standardError.write(Data("\(kind) \(image.width)x\(image.height) median \(samples[samples.count / 2]) ms\n".utf8)) }
        // The slowest call, by the clock and by the thread's own CPU time (which the other
        // processes of a busy machine do not lengthen).
        times[kind + "_worst", default: []].append(samples.last!)
        times[kind + "_worst_cpu", default: []].append(cpu.max()!)
        return (found, TestCard.bestMatch(image).separation)
    }
    func natural(_ image: RGBImage, _ name: String) {
        let (found, separation) = time(image, "natural")
        checked["natural", default: 0] += 1
        if separation > naturalStrongest.separation { naturalStrongest = (separation, name) }
        if let found { failures.append("\(name): taken for the card at \(found)") }
    }
    // Cards with cells under 6 pixels (in pictures under 100 pixels or so) are only looked for
    // where they fill the picture: counted apart.
    func card(_ image: RGBImage, _ kind: String, _ name: String, cell: Double) {
        let kind = kind == "inset" && cell < 6 ? "inset_small" : kind
        let (found, separation) = time(image, kind)
        checked[kind, default: 0] += 1
        if kind == "inset_small" { if found == nil { checked["inset_small_missed", default: 0] += 1 }; return }
        if separation < cardWeakest.separation { cardWeakest = (separation, name) }
        if found == nil { failures.append("\(name): card missed (separation \(separation))") }
    }

    var files: [String] = []
    for folder in folders {
        files += ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { !$0.hasPrefix(".") }.sorted().map { folder + "/" + $0 }
    }
    var random = SystemRandomNumberGenerator()
    for file in files {
        guard let media = try? MediaFile(path: file), media.type.kind == .image, let decoded = try? decoder.decode(media) else { continue }
        let photo = decoded.image, w = photo.width, h = photo.height, name = (file as NSString).lastPathComponent
        natural(photo, name)
        // A large analysis size (pictures reach the check at about 640 to 1280 px on the long side).
        _ = time(photo.resizedPillowBilinear(width: 1280, height: 1280), "natural_1280")
        for i in 0..<crops {
            let cw = Int.random(in: (w / 3)...w, using: &random), ch = Int.random(in: (h / 3)...h, using: &random)
            natural(photo.cropped(x: Int.random(in: 0...(w - cw), using: &random), y: Int.random(in: 0...(h - ch), using: &random), width: cw, height: ch), "\(name) crop \(i)")
        }
        guard w >= 64 && h >= 64 else { continue }
        var placed: [(String, String, RGBImage, cell: Double)] = [("whole", "whole", TestCard.render(width: w, height: h), Double(min(w, h)) / 8)]
        for (corner, x, y) in [("top-left", 0, 0), ("top-right", w - w / 2, 0), ("bottom-left", 0, h - h / 2), ("bottom-right", w - w / 2, h - h / 2), ("middle", w / 4, h / 4)] {
            placed.append(("inset", "quarter \(corner)", TestCard.render(width: w / 2, height: h / 2, on: photo, x: x, y: y), Double(min(w, h)) / 16))
        }
        placed.append(("inset", "strip", TestCard.render(width: w, height: h / 4 + 1, on: photo, x: 0, y: h / 3), Double(h / 4 + 1) / 8))
        // A screenshot: the photo as wallpaper, a light grey window with a darker title bar, the
        // card inside it.
        var window = photo
        for y in (h / 8)..<(h * 7 / 8) {
            let grey: UInt8 = y < h / 8 + h / 24 ? 150 : 205
            for x in (w / 8)..<(w * 7 / 8) { let p = (y * w + x) * 3; window.pixels[p] = grey; window.pixels[p + 1] = grey; window.pixels[p + 2] = grey + 3 }
        }
        placed.append(("inset", "screenshot", TestCard.render(width: w * 5 / 8, height: h * 5 / 8, on: window, x: w * 3 / 16, y: h * 3 / 16), Double(min(w, h) * 5 / 8) / 8))
        // Letterboxed video: black bars above and below.
        placed.append(("inset", "letterbox", TestCard.render(width: w, height: h * 9 / 16, on: RGBImage(width: w, height: h, filledWith: (0, 0, 0)), x: 0, y: h * 7 / 32), Double(h * 9 / 16) / 8))
        for (kind, what, image, cell) in placed {
            card(image, kind, "\(name) \(what)", cell: cell)
            if let jpeg = try? JPEGCodec.encode(image, quality: 50), let back = try? decoder.decode(jpeg) {
                card(back.image, kind, "\(name) \(what) q50", cell: cell)
            }
            card(image.resizedPillowBilinear(width: w / 2, height: h / 2), kind, "\(name) \(what) halved", cell: cell / 2)
        }
    }
    func ms(_ v: Double) -> Double { (v * 1000).rounded() / 1000 }
    var result: [String: Any] = [
        "what": "testcard", "checked": checked, "reps": reps,
        "natural_strongest_separation": naturalStrongest.separation, "natural_strongest": naturalStrongest.name,
        "card_weakest_separation": cardWeakest.separation, "card_weakest": cardWeakest.name,
        "threshold": TestCard.threshold, "failures": failures,
    ]
    for (kind, values) in times {
        let sorted = values.sorted()
        result[kind + "_ms"] = ["median": ms(sorted[sorted.count / 2]), "max": ms(sorted.last!)]
    }
    let data = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
    print(String(decoding: data, as: UTF8.self))
}
