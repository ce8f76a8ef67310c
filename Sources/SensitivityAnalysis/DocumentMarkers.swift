import Foundation

/// What document a zip is, from its own markers (never its name): EPUB's and OpenDocument's
/// first entry `mimetype`, Office Open XML's `[Content_Types].xml` and its part folders.
struct DocumentMarkers: Sendable {
    var mimetype: String?
    var contentTypes = false
    var folders: Set<String> = []

    /// Notes an entry's name.
    mutating func note(_ name: String) {
        if name == "[Content_Types].xml" { contentTypes = true }
        if let first = name.split(separator: "/", maxSplits: 1).first, name.contains("/") { folders.insert(String(first)) }
    }

    /// "EPUB", "OpenDocument text", "DOCX"...; nil for a plain zip.
    var kind: String? {
        if let mimetype = mimetype?.trimmingCharacters(in: .whitespacesAndNewlines) {
            if mimetype == "application/epub+zip" { return "EPUB" }
            let odf = "application/vnd.oasis.opendocument."
            if mimetype.hasPrefix(odf) { return "OpenDocument " + mimetype.dropFirst(odf.count) }
        }
        if contentTypes {
            if folders.contains("word") { return "DOCX" }
            if folders.contains("ppt") { return "PPTX" }
            if folders.contains("xl") { return "XLSX" }
            return "Office Open XML"
        }
        return nil
    }
}
