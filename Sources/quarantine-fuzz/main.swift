// libFuzzer harnesses for every entry point that parses untrusted bytes (issue 16).
//
// Built only by `make fuzz` (scripts/fuzz.sh): `-sanitize=fuzzer,address -DFUZZING`, in a build
// folder of its own. A normal build compiles the stub at the bottom, which says how to build it.
// One binary holds every harness; the first argument names it, the rest go to libFuzzer:
//
//     quarantine-fuzz jpeg -max_total_time=60 CORPUS SEEDS
//     quarantine-fuzz video crash-1234        (runs one input, as a regression test does)
#if canImport(Glibc)
import Glibc
#endif
#if FUZZING
@testable import MediaDecoding
@testable import QuarantineCore
@testable import ServiceSupport
import CDBus
import GuardianAPI

/// A harness: takes one input, must never crash, hang or leak on it.
struct Harness {
    let name: String
    let about: String
    let run: ([UInt8]) -> Void
}

/// Inputs that go through a file (the decoders read by descriptor, with `pread`) are written to
/// one file in /dev/shm (tmpfs: memory), rewritten for each input.
let scratchPath: String = {
    let dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
    return "\(dir)/quarantine-fuzz-\(getpid())"
}()

func withFile(_ bytes: [UInt8], _ body: (MediaFile) -> Void) {
    let fd = open(scratchPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { fatalError("cannot write \(scratchPath): errno \(errno)") }
    var written = 0
    bytes.withUnsafeBytes { raw in
        while written < raw.count {
            let n = write(fd, raw.baseAddress! + written, raw.count - written)
            guard n > 0 else { fatalError("cannot write \(scratchPath): errno \(errno)") }
            written += n
        }
    }
    close(fd)
    guard let file = try? MediaFile(path: scratchPath) else { return }
    body(file)
}

/// With QUARANTINE_FUZZ_SHOW set, each harness says what it made of an input (to check that the
/// seeds reach the parsers, not just their first refusal).
let showing = getenv("QUARANTINE_FUZZ_SHOW") != nil
func show(_ text: String) { if showing { print(text) } }

/// Runs `body` (always) and describes its result (only when showing).
func outcome<T>(_ body: () throws -> T) -> String {
    do {
        let value = try body()
        return showing ? "\(value)" : ""
    } catch { return showing ? "error: \(error)" : "" }
}

/// Small limits, so that a mutated header cannot make one input take seconds legitimately.
let limits: MediaLimits = {
    var l = MediaLimits.default
    l.maxPixels = 4096 * 4096
    l.decodeMemoryBytes = 256 << 20
    return l
}()

let harnesses: [Harness] = [
    Harness(name: "sniff", about: "format sniffing, header dimensions and the animation checks") { bytes in
        let type = MediaType.sniff(bytes)
        _ = PictureFormats.sniff(bytes[...])
        _ = try? ImageHeader.dimensions(bytes, type: type)
        for t in [MediaType.gif, .webp, .png] { _ = ImageHeader.isAnimated(bytes, type: t) }
    },
    Harness(name: "jpeg-header", about: "the JPEG header (TurboJPEG) and the EXIF orientation parser") { bytes in
        show("\(outcome { try JPEGCodec.header(bytes) }) orientation \(EXIFOrientation.read(jpeg: bytes)) thumbnail \(EXIFOrientation.thumbnail(jpeg: bytes)?.count ?? 0)")
    },
    Harness(name: "jpeg", about: "the TurboJPEG decode path: scaling, orientation, CMYK") { bytes in
        show(outcome { try ImageDecoder(limits: limits).decode(bytes, type: .jpeg).image.width })
    },
    Harness(name: "ffmpeg-image", about: "libavcodec's picture decoders (GIF, BMP, small PNG, TIFF), through the file path with its budget checks") { bytes in
        withFile(bytes) { file in
            guard [.gif, .bmp, .png, .tiff].contains(file.type) else { return }
            show(outcome { try ImageDecoder(limits: limits).decodeAll(file).map { "\($0.image.width)x\($0.image.height)" } })
        }
        if MediaType.sniff(bytes) == .tiff { _ = try? ImageDecoder.ffmpegTIFF(bytes, request: ImageDecoder(limits: limits).request) }
    },
    Harness(name: "picture", about: "every other picture decoder through the file path: WebP, HEIF/AVIF, JPEG XL, SVG") { bytes in
        withFile(bytes) { file in
            guard file.type.kind == .image else { return }
            show(outcome { try ImageDecoder(limits: limits).decodeAll(file).map { "\($0.image.width)x\($0.image.height)" } })
        }
    },
    Harness(name: "video", about: "the video prober, the front-to-back sampler and the keyframe/fill path") { bytes in
        withFile(bytes) { file in
            let opened = Result { () throws(MediaError) in try VideoDecoder(file: file, limits: limits, minimumLongSide: 64, minimumShortSide: 48) }
            show("\(file.type): \(opened.map(\.info))")
            guard case .success(let video) = opened else { return }
            var count = 0
            show(outcome { try video.sample(maxGap: 0.5) { _ in count += 1; return count < 40 } })
            let keyframes = video.keyframeTimes
            show("keyframes \(keyframes)")
            for index in keyframes.indices.prefix(4) {
                _ = try? video.decodeKeyframe(index)
                let end = index + 1 < keyframes.count ? keyframes[index + 1] : (video.info.duration ?? keyframes[index] + 2)
                var filled = 0
                _ = try? video.fill(fromKeyframe: index, start: keyframes[index], end: end, maxGap: 0.5, sampleKeyframe: true) { _ in
                    filled += 1; return filled < 20
                }
            }
        }
    },
    Harness(name: "archive", about: "libarchive through ArchiveReader: every entry's header, its head sniffed, the rest read through under a small budget") { bytes in
        withFile(bytes) { file in
            guard file.type.kind == .container, file.type != .pdf else { return }
            var small = ContainerLimits()
            small.maxEntries = 64
            small.maxExpandedBytes = 16 << 20
            small.ratioFloorBytes = 1 << 20
            small.maxSeconds = 5
            let budget = ContainerBudget(limits: small)
            show(outcome { () throws(MediaError) -> [String] in
                let reader = try ArchiveReader(descriptor: file.descriptor, size: file.identity.size, type: file.type, path: file.path, budget: budget, isTopLevel: true)
                var names: [String] = []
                let buffer = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 16)
                defer { buffer.deallocate() }
                while let entry = try reader.next() {
                    names.append("\(entry.name) \(entry.isRegularFile) \(entry.isEncrypted)")
                    guard entry.isRegularFile, !entry.isEncrypted else { continue }
                    let n = try reader.read(buffer, count: MediaType.sniffLength)
                    _ = MediaType.sniff(UnsafeRawBufferPointer(start: buffer, count: n))
                    try reader.discard()
                }
                return names
            })
        }
    },
    Harness(name: "pdf", about: "Poppler through PDFDocument: page sizes, image areas, the first pages drawn small") { bytes in
        withFile(bytes) { file in
            guard file.type == .pdf else { return }
            show(outcome { () throws(MediaError) -> String in
                let document = try PDFDocument(descriptor: file.descriptor, path: file.path)
                for page in 0..<min(document.pageCount, 3) {
                    let area = try document.pageArea(page)
                    _ = try document.render(page, area: area, longSide: 96)
                    for region in try document.imageAreas(page, limit: 4) { _ = try document.render(page, area: region, longSide: 48) }
                }
                return "\(document.pageCount) pages"
            })
        }
    },
    Harness(name: "gif-frames", about: "the GIF frame counter") { bytes in
        show(outcome { try ImageHeader.gifFrameCount(bytes, upTo: 100_000) })
        _ = try? ImageHeader.checkGIFFirstFrameComplete(bytes)
    },
    Harness(name: "config", about: "the TOML configuration, as the agent reads it") { bytes in
        show(outcome { try Settings().applying(toml: String(decoding: bytes, as: UTF8.self), from: "fuzz.toml").mode })
    },
    Harness(name: "dbus", about: "D-Bus messages as the notifier reads them (libdbus's demarshaller, then our reader)") { bytes in
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let message = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.flatMap { base in
                base.withMemoryRebound(to: CChar.self, capacity: buffer.count) { dbus_message_demarshal($0, Int32(buffer.count), &error) }
            }
        }
        guard let message else { return show("not a message: \(error.message.map { String(cString: $0) } ?? "?")") }
        defer { dbus_message_unref(message) }
        // What DesktopNotifier reads: signals (id, key), replies (capabilities, server information, an id).
        var signal = DBusMessageReader(message)
        show("signal: \(String(describing: signal.uint32())) \(String(describing: signal.string()))")
        var reply = DBusMessageReader(message)
        show("reply: \(String(describing: reply.stringArray())) \(String(describing: reply.string())) \(String(describing: reply.string()))")
        _ = reply.string(); _ = reply.string()
        if let sender = dbus_message_get_sender(message) { _ = String(cString: sender) }
    },
    Harness(name: "guardian-request", about: "the guardian socket's messages: each verb's request as the service decodes it, each verb's answer as the CLI decodes and pages it") { bytes in
        // As the service reads a request: the verb (typed errors for the rest), then that verb's
        // own request type. Every verb's type is tried too, as a message could claim any verb.
        switch Result(catching: { () throws(GuardianProtocolError) in try GuardianProtocol.verb(of: bytes) }) {
        case .success(let verb): show("verb \(verb)")
        case .failure(let error): show("not a request: \(error)")
        }
        for type in GuardianWire.requestTypes.values { guardianRequest(type, bytes) }
    },
]

/// `bytes` as a request of type `Request` (the service's decoding): what decodes must encode
/// to a request of the same verb that decodes to the same bytes again.
func guardianRequest<Request: GuardianRequest>(_ type: Request.Type, _ bytes: [UInt8]) {
    // An answer of this verb, as the CLI reads it (and pages it, for the paged verbs).
    if let answer = try? GuardianProtocol.decodeAnswer(Request.Answer.self, from: bytes) {
        show("answer \(Request.verb): refusal \(String(describing: answer.refusal)), served \(answer.answer != nil)")
        _ = GuardianProtocol.encode(answer)
        if let paged = type as? any GuardianPagedRequest.Type { guardianPages(paged, bytes) }
    }
    guard let request = try? GuardianProtocol.decode(Request.self, from: bytes) else { return }
    let encoded = GuardianProtocol.encode(request)
    precondition((try? GuardianProtocol.verb(of: encoded)) == Request.verb, "a \(Request.verb) request encodes to another verb")
    let again = try? GuardianProtocol.decode(Request.self, from: encoded)
    precondition(again.map { GuardianProtocol.encode($0) } == encoded, "a \(Request.verb) request does not survive its own encoding")
    show("request \(Request.verb): \(encoded.count) bytes")
}

/// A paged answer's pages put together, as GuardianClient.send does.
func guardianPages<Request: GuardianPagedRequest>(_ type: Request.Type, _ bytes: [UInt8]) {
    guard var whole = (try? GuardianProtocol.decodeAnswer(Request.Answer.self, from: bytes))?.answer else { return }
    let page = whole
    whole.append(page: page)
    show("pages \(Request.verb): more \(whole.more) next \(String(describing: whole.next))")
}

@MainActor func usage() -> Never {
    print("usage: quarantine-fuzz HARNESS [libFuzzer options] [CORPUS_DIR... | INPUT...]\n\nharnesses:")
    for h in harnesses { print("  \(h.name.padding(toLength: 14, withPad: " ", startingAt: 0)) \(h.about)") }
    exit(2)
}

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

nonisolated(unsafe) var selected: Harness! = nil

/// libFuzzer's entry point (its archive's own `main` refers to it; this program's `main` runs the
/// driver itself, after choosing the harness).
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    selected.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

let arguments = CommandLine.arguments
guard arguments.count >= 2, let harness = harnesses.first(where: { $0.name == arguments[1] }) else { usage() }
selected = harness
// libFuzzer sees the program name and the options after the harness's name.
var argv: [UnsafeMutablePointer<CChar>?] = ([arguments[0]] + arguments.dropFirst(2)).map { strdup($0) } + [nil]
var argc = CInt(argv.count - 1)
atexit { unlink(scratchPath) }
let status = argv.withUnsafeMutableBufferPointer { buffer in
    var base = buffer.baseAddress!
    return LLVMFuzzerRunDriver(&argc, &base) { data, size in fuzzOne(data, size) }
}
exit(status)
#else
print("quarantine-fuzz holds libFuzzer harnesses; build and run them with `make fuzz` (scripts/fuzz.sh).")
exit(2)
#endif
