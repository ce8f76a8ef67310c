import Foundation

/// A bare HTTP/1.1 client over a TCP socket: sends exactly the bytes a test writes (a forged
/// Host, a foreign Origin, no cookie), as no browser would.
struct RawHTTP {
    /// One answer: the status, the headers (names lowercased; the last of a repeated one), the body.
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// Sends `method path` to 127.0.0.1:`port` with `headers` (Host given unless `host` is nil)
    /// and `body`; reads the answer to the end (Connection: close).
    static func send(port: Int, _ method: String, _ path: String, host: String? = "default", headers: [String: String] = [:], body: String? = nil) throws -> Answer {
        var lines = ["\(method) \(path) HTTP/1.1"]
        if let host { lines.append("Host: \(host == "default" ? "127.0.0.1:\(port)" : host)") }
        for (name, value) in headers { lines.append("\(name): \(value)") }
        if let body {
            lines.append("Content-Type: application/x-www-form-urlencoded")
            lines.append("Content-Length: \(body.utf8.count)")
        }
        lines.append("Connection: close")
        let request = Array((lines.joined(separator: "\r\n") + "\r\n\r\n" + (body ?? "")).utf8)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { throw Failure(description: "connect: \(errno)") }
        var sent = 0
        while sent < request.count {
            let count = request[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { throw Failure(description: "write: \(errno)") }
            sent += count
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { break }
            received += chunk[0..<count]
        }
        guard let split = received.firstRange(of: Array("\r\n\r\n".utf8)) else { throw Failure(description: "no answer: \(String(decoding: received, as: UTF8.self))") }
        let head = String(decoding: received[..<split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        guard let statusLine = head.first, statusLine.split(separator: " ").count >= 2, let status = Int(statusLine.split(separator: " ")[1]) else {
            throw Failure(description: "no status line")
        }
        var fields: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(received[split.upperBound...])
        if fields["transfer-encoding"]?.lowercased() == "chunked" { body = dechunk(body) }
        return Answer(status: status, headers: fields, body: body)
    }

    /// A chunked body's bytes.
    static func dechunk(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [], index = 0
        while let end = bytes[index...].firstRange(of: Array("\r\n".utf8)) {
            guard let size = Int(String(decoding: bytes[index..<end.lowerBound], as: UTF8.self).split(separator: ";")[0], radix: 16), size > 0 else { break }
            let start = end.upperBound
            guard start + size <= bytes.count else { break }
            out += bytes[start..<start + size]
            index = start + size + 2
            guard index < bytes.count else { break }
        }
        return out
    }
}
