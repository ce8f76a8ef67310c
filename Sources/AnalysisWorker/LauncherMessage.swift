import Foundation

/// What a guardian service and the worker launcher (`quarantine worker-launcher`) say to each
/// other over one SOCK_SEQPACKET connection to /run/quarantine/launcher.sock, one connection per
/// worker. Every message is one packet: a type byte, then JSON (or nothing).
///
///     guardian -> launcher  W want:    a worker for the protected account `account` (a uid), with
///                                      these few environment variables (an allow-list)
///     launcher -> guardian  S started: its pid; descriptors: the service's end of the worker's
///                                      socket pair, and the read end of its standard error
///     launcher -> guardian  N refused: why not (then the launcher closes the connection)
///     guardian -> launcher  K kill:    SIGKILL the worker now (closing the connection does too)
///     launcher -> guardian  E ended:   how the worker ended (then the launcher closes it)
enum LauncherMessage {
    enum Kind: UInt8 {
        case want = 0x57     // W
        case started = 0x53  // S
        case refused = 0x4E  // N
        case kill = 0x4B     // K
        case ended = 0x45    // E
    }

    struct Want: Codable, Equatable {
        /// The uid of the protected account whose files the worker will judge.
        var account: UInt32
        /// Variables for the worker, only those of ``passedVariables``.
        var environment: [String: String]
    }

    struct Started: Codable {
        var pid: Int32
    }

    struct Refused: Codable {
        var reason: String
    }

    struct Ended: Codable {
        var how: String
    }

    /// The only variables a guardian may give its worker: the analyzer's tuning, the log level,
    /// the language, and the tests' crash switch (which only makes the worker fail on marked
    /// files). Never a loader's (LD_*), a path, or anything else a worker would act on.
    static let passedVariables: Set<String> = [AnalysisWorkerProcess.configurationVariable, "QUARANTINE_LOG_LEVEL", "LANG", "LC_ALL",
                                               AnalysisWorkerProcess.testOnlyCrashMarkerVariable]

    /// The longest request the launcher reads (the configuration's JSON is under 1 KiB).
    static let maxRequestBytes = 16 << 10
    /// The longest value of one variable.
    static let maxVariableBytes = 8 << 10

    static func encode<T: Encodable>(_ kind: Kind, _ value: T) -> [UInt8] { TypedPacket.encode(kind.rawValue, value) }

    static func decode<T: Decodable>(_ kind: Kind, _ type: T.Type, _ bytes: [UInt8]) -> T? {
        bytes.first == kind.rawValue ? TypedPacket.body(type, bytes) : nil
    }

    /// What is wrong with a request's environment, if anything: a name off the allow-list, a
    /// value too long or with a NUL byte.
    static func environmentProblem(_ environment: [String: String]) -> String? {
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) {
            guard passedVariables.contains(name) else { return "the variable \(name.prefix(64).debugDescription) is not one a worker is given" }
            guard value.utf8.count <= maxVariableBytes else { return "the variable \(name) is over \(maxVariableBytes) bytes" }
            guard !value.utf8.contains(0) else { return "the variable \(name) has a NUL byte" }
        }
        return nil
    }
}
