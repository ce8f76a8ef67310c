import CFFmpeg
import CHeif

/// HEIF (HEIC) and AVIF stills through libheif: grid tiles, rotation, mirroring and clean
/// aperture are applied by libheif as a viewer shows them; the primary image comes first, then
/// the other top-level images of a collection (a burst, an edited and original pair).
struct HEIFFormat: PictureFormat {
    let type: MediaType
    /// Top-level images analysed at most (after the primary one).
    static let maxImages = 8

    func matches(_ head: ArraySlice<UInt8>) -> Bool {
        head.count >= 12 && Array(head.dropFirst(4).prefix(4)) == Array("ftyp".utf8) && MediaType.stillImageBrand(Array(head)) == type
    }

    func decode(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> DecodedImage {
        try decodeAll(bytes, request: request, limit: 1)[0]
    }

    func decodeAll(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> [DecodedImage] {
        try decodeAll(bytes, request: request, limit: Self.maxImages)
    }

    func decodeAll(_ bytes: [UInt8], request: DecodeRequest, limit: Int) throws(MediaError) -> [DecodedImage] {
        let name = type == .avif ? "AVIF" : "HEIF"
        guard let context = heif_context_alloc() else { throw MediaError(.io, "out of memory", operation: "heif_context_alloc") }
        defer { heif_context_free(context) }
        let read = bytes.withUnsafeBytes { heif_context_read_from_memory(context, $0.baseAddress, $0.count, nil) }
        try check(read, "heif_context_read_from_memory", name)
        var primary: heif_item_id = 0
        try check(heif_context_get_primary_image_ID(context, &primary), "heif_context_get_primary_image_ID", name)
        let count = Int(heif_context_get_number_of_top_level_images(context))
        var ids = [heif_item_id](repeating: 0, count: max(count, 1))
        _ = heif_context_get_list_of_top_level_image_IDs(context, &ids, Int32(count))
        let ordered = [primary] + ids.prefix(count).filter { $0 != primary }
        var images: [DecodedImage] = []
        for id in ordered.prefix(limit) {
            var handle: OpaquePointer?
            try check(heif_context_get_image_handle(context, id, &handle), "heif_context_get_image_handle", name)
            defer { heif_image_handle_release(handle) }
            try request.limits.check(width: Int(heif_image_handle_get_width(handle)), height: Int(heif_image_handle_get_height(handle)))
            var image: OpaquePointer?
            try check(heif_decode_image(handle, &image, heif_colorspace_RGB, heif_chroma_interleaved_RGB, nil), "heif_decode_image", name)
            defer { heif_image_release(image) }
            let width = Int(heif_image_get_width(image, heif_channel_interleaved)), height = Int(heif_image_get_height(image, heif_channel_interleaved))
            var stride: Int32 = 0
            guard width > 0, height > 0, let plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride) else {
                throw MediaError(.corrupt, "is a \(name) picture whose decoded image is empty", operation: "heif_image_get_plane_readonly")
            }
            let target = FFmpeg.reducedSize(width: width, height: height, minimumLongSide: request.minimumLongSide, minimumShortSide: request.minimumShortSide)
            let rgb = try FFmpeg.convertPacked(plane, stride: Int(stride), width: width, height: height, format: AV_PIX_FMT_RGB24, to: target)
            images.append(DecodedImage(image: rgb, originalWidth: width, originalHeight: height, type: type))
        }
        return images
    }

    func check(_ error: heif_error, _ operation: String, _ name: String) throws(MediaError) {
        guard error.code != heif_error_Ok else { return }
        let message = error.message.map { String(cString: $0) } ?? "unknown libheif error"
        if error.code == heif_error_Unsupported_feature || error.code == heif_error_Unsupported_filetype || error.code == heif_error_Decoder_plugin_error {
            throw MediaError(.unsupportedFormat, "is a \(name) picture this build's libheif cannot decode", cause: message, operation: operation)
        }
        if error.code == heif_error_Invalid_input && message.lowercased().contains("end of") {
            throw MediaError(.truncated, "is a truncated \(name) picture", cause: message, operation: operation)
        }
        throw MediaError(.corrupt, "is a damaged \(name) picture", cause: message, operation: operation)
    }

    /// The largest image size an `ispe` property declares (grid pictures declare the whole
    /// grid), wherever the `meta` box is, as RGB plus the decoder's YUV planes; 24 megapixels
    /// when none is there.
    func workingMemory(_ header: HeaderReader, request: DecodeRequest) throws(MediaError) -> Int {
        var largest = 0
        for size in try ImageHeader.heifImageSizes(header) {
            try request.limits.check(width: size.width, height: size.height)
            largest = max(largest, size.width * size.height)
        }
        let pixels = largest > 0 ? largest : 24_000_000
        // RGB (3) and the decoder's planes (up to 3 more) at full size, and the output at
        // analysis size (640x640 RGB, twice).
        return pixels * 6 + 640 * 640 * 3 * 2
    }

    func inventory() -> DecoderInventory.Entry {
        let decoders = heif_have_decoder_for_format(type == .avif ? heif_compression_AV1 : heif_compression_HEVC) != 0
        let version = String(cString: heif_get_version())
        return DecoderInventory.Entry(name: type.rawValue, available: decoders,
                                      detail: decoders ? "libheif \(version)" : "libheif \(version) has no \(type == .avif ? "AV1" : "HEVC") decoder plugin")
    }
}
