import Foundation
import Hummingbird
import Locking
import Logging
import QuarantineCore
import ServiceLifecycle

/// The local review page's server: Hummingbird on 127.0.0.1, a port the kernel picks, for one
/// start of `quarantine review`. It writes its address (with the secret) to a 0600 file in a
/// private folder, serves ``ReviewSite``, and stops on SIGINT/SIGTERM, on ``stop()``, or after
/// ``ReviewOptions/idleTimeout`` seconds without a request.
public final class ReviewServer: Sendable {
    /// Why the server could not start.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// Where the running page is.
    public struct Address: Sendable, Equatable {
        public let port: Int
        /// The address with the secret, to be opened once (it sets the cookie).
        public let url: String
        /// The file that holds it (0600).
        public let file: String
    }

    let options: ReviewOptions
    let gate: Locked<ReviewGate?> = Locked(nil)
    let lastRequest = Locked(Date())
    let stopRequested = Locked(false)
    /// One backend request at a time (see ``ReviewSite/send(_:_:)``).
    let backendTurn = NSLock()
    /// Words for the next page shown (what an action did).
    let flash = Locked<String?>(nil)
    let shown = ShownItems()
    let logger: Logger

    public init(options: ReviewOptions, logger: Logger = Logger(label: "quarantine.review")) {
        self.options = options
        var logger = logger
        logger.logLevel = .warning
        self.logger = logger
    }

    /// The address file's name in the state folder.
    public static let addressFileName = ReviewPageAddress.fileName

    /// Asks the server to stop (tests; the idle timer does the same).
    public func stop() { stopRequested.withLock { $0 = true } }

    /// Runs until stopped; `started` gets the address once the socket listens.
    public func run(started: @escaping @Sendable (Address) async -> Void) async throws {
        let site = ReviewSite(server: self)
        let options = options
        let gate = gate
        let app = Application(
            responder: CallbackResponder { (request: Request, _: BasicRequestContext) in await site.respond(to: request) },
            configuration: .init(address: .hostname("127.0.0.1", port: options.port), serverName: nil),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                let opened = ReviewGate(port: port)
                gate.withLock { $0 = opened }
                let url = "http://127.0.0.1:\(port)/?token=\(opened.secret)"
                let file = options.stateFolder + "/" + Self.addressFileName
                Self.writeAddress(url: url, to: file)
                await started(Address(port: port, url: url, file: file))
            },
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: options.handlesSignals ? [.sigterm, .sigint] : [], logger: logger))
        let idle = options.idleTimeout
        let finished = Locked(false)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                defer { finished.withLock { $0 = true } }
                try await group.run()
            }
            // The idle timer: asks the group to shut down gracefully (open requests finish).
            tasks.addTask { [self] in
                while !finished.withLock({ $0 }) {
                    try? await Task.sleep(nanoseconds: 200_000_000)
                    let quiet = Date().timeIntervalSince(lastRequest.withLock { $0 })
                    if stopRequested.withLock({ $0 }) || quiet > idle {
                        await group.triggerGracefulShutdown()
                        return
                    }
                }
            }
            try await tasks.waitForAll()
        }
        shown.forgetAll()
        if let port = gate.withLock({ $0?.port }) { Self.removeAddress(options.stateFolder + "/" + Self.addressFileName, port: port) }
    }

    /// Writes `url` and this process's pid to `file`, mode 0600, never through a link.
    static func writeAddress(url: String, to file: String) {
        unlink(file)
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let text = Array("\(getpid())\n\(url)\n".utf8)
        _ = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Removes the address file when it is still this start's.
    static func removeAddress(_ file: String, port: Int) {
        guard let running = ReviewPageAddress.running(in: (file as NSString).deletingLastPathComponent), running.pid == getpid(), running.url.contains(":\(port)/") else { return }
        unlink(file)
    }
}
