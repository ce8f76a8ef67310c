import Foundation
import Testing
import TestSupport
@testable import ServiceSupport

/// The socket the guardian service and the analysis worker talk through: whole messages, open
/// descriptors passed alongside, and the kernel's word on who is at the other end.
@Suite("Local sockets", .ownThread)
struct LocalSocketTests {
    static func temporaryDirectory() throws -> URL {
        let url = URL(fileURLWithPath: "/tmp").appendingPathComponent("qsock-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("a descriptor sent over a pair reads the same file, after its name is gone; messages stay whole; end of stream is nil")
    func descriptorPassing() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("picture.bin")
        try Data("the bytes of a picture".utf8).write(to: file)
        let fd = open(file.path, O_RDONLY | O_CLOEXEC)
        #expect(fd >= 0)
        let (parent, worker) = try LocalSocket.pair()
        try parent.send(Array("{\"id\":1}".utf8), descriptors: [fd])
        try parent.send(Array("second".utf8))
        close(fd)
        try FileManager.default.removeItem(at: file)   // the worker never needs the name

        let first = try #require(try worker.receive())
        #expect(String(decoding: first.bytes, as: UTF8.self) == "{\"id\":1}")
        #expect(first.descriptors.count == 1)
        var buffer = [UInt8](repeating: 0, count: 64)
        let read = pread(first.descriptors[0], &buffer, buffer.count, 0)
        #expect(String(decoding: buffer.prefix(max(0, read)), as: UTF8.self) == "the bytes of a picture")
        #expect(fcntl(first.descriptors[0], F_GETFD) & FD_CLOEXEC != 0, "received descriptors are close-on-exec")
        close(first.descriptors[0])
        let second = try #require(try worker.receive())
        #expect(String(decoding: second.bytes, as: UTF8.self) == "second" && second.descriptors.isEmpty)
        parent.close()
        #expect(try worker.receive() == nil)
    }

    @Test("a message over the limit is refused and the descriptors it carried are closed, not leaked")
    func oversizedRefused() throws {
        let (a, b) = try LocalSocket.pair()
        // The write end of a pipe travels with the message: once every copy of it is closed,
        // the read end sees end of file.
        var pipeEnds: [Int32] = [-1, -1]
        #expect(pipe(&pipeEnds) == 0)
        defer { close(pipeEnds[0]) }
        try a.send([UInt8](repeating: 7, count: 4096), descriptors: [pipeEnds[1]])
        close(pipeEnds[1])
        #expect(throws: ServiceError.self) { _ = try b.receive(maxLength: 1024) }
        var byte: UInt8 = 0
        var poller = pollfd(fd: pipeEnds[0], events: Int16(POLLIN), revents: 0)
        #expect(poll(&poller, 1, 1000) == 1 && read(pipeEnds[0], &byte, 1) == 0, "the write end that came with the refused message was closed")
    }

    @Test("listen at a path: mode set, a stale socket replaced, a regular file never; the peer's uid is the kernel's, also for another user (nobody)")
    func listenAndPeerCredentials() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("api.sock").path
        let notASocket = dir.appendingPathComponent("file").path
        try Data("keep".utf8).write(to: URL(fileURLWithPath: notASocket))
        #expect(throws: ServiceError.self) { _ = try LocalSocket.listen(at: notASocket, mode: 0o666) }
        #expect(try String(contentsOfFile: notASocket, encoding: .utf8) == "keep")

        _ = try LocalSocket.listen(at: path, mode: 0o600)   // left behind, as by a crashed run
        let server = try LocalSocket.listen(at: path, mode: 0o666)
        var info = stat()
        #expect(lstat(path, &info) == 0 && info.st_mode & 0o777 == 0o666)

        let client = try LocalSocket.connect(to: path)
        let connection = try server.accept()
        #expect(try connection.peer() == LocalSocket.Peer(pid: getpid(), uid: getuid(), gid: getgid()))
        try client.send(Array("hello".utf8))
        #expect(try connection.receive()?.bytes == Array("hello".utf8))

        guard getuid() == 0 else { return }   // another user needs root to become one
        chmod(dir.path, 0o755)
        let other = Process()
        other.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        other.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                           "import socket,sys; s=socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect(sys.argv[1]); s.send(b'from nobody'); s.recv(1)", path]
        try other.run()
        let fromNobody = try server.accept()
        #expect(try fromNobody.peer().uid == 65534 && fromNobody.peer().pid == other.processIdentifier)
        #expect(try fromNobody.receive()?.bytes == Array("from nobody".utf8))
        fromNobody.close()
        other.waitUntilExit()
    }
}
