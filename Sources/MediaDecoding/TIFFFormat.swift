import CTIFFPages

/// TIFF through libtiff: every full-resolution page (a fax, a scan, a multi-page document), each
/// read strip by strip (or tile by tile) and averaged down on the way, so memory is one strip
/// plus the output whatever the page size. A page that ends early is judged on what arrived.
struct TIFFFormat: PictureFormat {
    /// Pages analysed at most.
    static let maxPages = 16
    /// The largest strip or tile read at once.
    static let maxBlockBytes = 128 << 20

    var type: MediaType { .tiff }

    func matches(_ head: ArraySlice<UInt8>) -> Bool {
        head.starts(with: [0x49, 0x49, 0x2A, 0x00]) || head.starts(with: [0x4D, 0x4D, 0x00, 0x2A])
    }

    func decode(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> DecodedImage {
        try pages(bytes, request: request, limit: 1)[0]
    }

    func decodeAll(_ bytes: [UInt8], request: DecodeRequest) throws(MediaError) -> [DecodedImage] {
        try pages(bytes, request: request, limit: Self.maxPages)
    }

    func pages(_ bytes: [UInt8], request: DecodeRequest, limit: Int) throws(MediaError) -> [DecodedImage] {
        // The first page's size, from its header, before libtiff allocates anything.
        if let size = ImageHeader.tiffDimensions(bytes) { try request.limits.check(width: size.width, height: size.height) }
        return try bytes.withUnsafeBufferPointer { (buffer) throws(MediaError) -> [DecodedImage] in
            guard let tiff = qtiff_open(buffer.baseAddress, buffer.count) else {
                throw MediaError(.corrupt, "is a TIFF whose header cannot be read", operation: "TIFFClientOpen")
            }
            defer { qtiff_close(tiff) }
            let count = Int(qtiff_pages(tiff, Int32(limit)))
            guard count > 0 else { throw MediaError(.corrupt, "is a TIFF with no readable page", operation: "TIFFReadDirectory") }
            var images: [DecodedImage] = []
            for page in 0..<count {
                var width: Int32 = 0, height: Int32 = 0
                guard qtiff_page_size(tiff, Int32(page), &width, &height) == 0 else {
                    if images.isEmpty { throw MediaError(.corrupt, "is a TIFF whose first page has no size", operation: "TIFFGetField") }
                    break
                }
                try request.limits.check(width: Int(width), height: Int(height))
                let target = FFmpeg.reducedSize(width: Int(width), height: Int(height), minimumLongSide: request.minimumLongSide,
                                                minimumShortSide: request.minimumShortSide)
                var pixels = [UInt8](repeating: 128, count: target.width * target.height * 3)
                var rows: Int64 = 0
                let status = pixels.withUnsafeMutableBufferPointer {
                    qtiff_read_reduced(tiff, Int32(page), Int32(target.width), Int32(target.height), Self.maxBlockBytes, $0.baseAddress, &rows)
                }
                if status == -2 {
                    throw MediaError(.dimensionsTooLarge, "is a TIFF whose page \(page + 1) is stored in strips or tiles over \(Self.maxBlockBytes >> 20) MiB each; refused", operation: "TIFFReadRGBAStrip")
                }
                if status < 0 {
                    if images.isEmpty {
                        throw MediaError(bytes.count < 64 ? .truncated : .corrupt,
                                         "is a damaged TIFF (page \(page + 1) cannot be read)",
                                         operation: "TIFFReadRGBAStrip")
                    }
                    break // a later page that cannot be read: the pages before it are judged
                }
                images.append(DecodedImage(image: RGBImage(width: target.width, height: target.height, pixels: pixels),
                                           originalWidth: Int(width), originalHeight: Int(height), type: .tiff,
                                           partialReason: status == 1 ? DecodedImage.endsEarly : nil))
            }
            return images
        }
    }

    /// One strip or tile at most (refused beyond; they are usually a few KiB) and the output.
    func workingMemory(_ header: HeaderReader, request: DecodeRequest) throws(MediaError) -> Int {
        let size = try ImageHeader.tiffDimensions(header)
        if let size { try request.limits.check(width: size.width, height: size.height) }
        let target = size.map { FFmpeg.reducedSize(width: $0.width, height: $0.height, minimumLongSide: request.minimumLongSide, minimumShortSide: request.minimumShortSide) }
            ?? (width: 1280, height: 1024)
        return Self.maxBlockBytes + target.width * target.height * (24 + 4 + 3)
    }

    func inventory() -> DecoderInventory.Entry {
        DecoderInventory.Entry(name: "tiff", available: true, detail: "libtiff, every page, strip by strip")
    }
}
