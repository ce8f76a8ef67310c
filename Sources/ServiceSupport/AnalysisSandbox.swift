import CSystemShims

/// The analysis worker's confinement: what the process that runs the image and video decoders
/// and the ONNX models on untrusted files gives up, for good, before it reads its first request.
///
/// After ``enter()`` the process
/// - dies when the service that started it dies (`PR_SET_PDEATHSIG`);
/// - holds only descriptors 0, 1, 2 and 3 (its socket to the service); everything else it might
///   have inherited is closed;
/// - has no capabilities (effective, permitted, inheritable, ambient and, where it could drop it,
///   bounding set all empty), cannot gain any through `execve` (`no_new_privs`), and writes no
///   core files;
/// - runs, in every thread, under a seccomp filter that refuses with `EPERM`: any change to the
///   file system (unlink, rename, mkdir, chmod, chown, truncate, xattrs, links, mounts, and opening
///   anything for writing, creating or truncating), new sockets of any kind (no network),
///   `execve`, `fork`, tracing or reading other processes, signals to any process but itself,
///   changing its user or groups, namespaces, keyrings, bpf, io_uring and kernel modules.
///
/// What it keeps: reading files it may read, its own memory (`mmap`, `mprotect`), threads, and
/// `memfd_create`, `write` and `ftruncate` on a memfd that it sends back over descriptor 3 with
/// `sendmsg`. The user id stays what it was: start the worker as an ordinary user.
/// `Sources/CSystemShims/qsys_sandbox.c` has the full list and the reasons.
public enum AnalysisSandbox {
    /// Enters the sandbox. Call it once, first thing in the worker, before any thread is
    /// started and before any request is read. Throws a ``ServiceError`` saying which step
    /// failed; the process may then be partly confined and must exit instead of serving requests.
    public static func enter() throws(ServiceError) {
        var reason = [CChar](repeating: 0, count: 256)
        let result = reason.withUnsafeMutableBufferPointer { buffer in
            qsys_enter_analysis_sandbox(buffer.baseAddress, buffer.count)
        }
        guard result == 0 else {
            let cause = reason.withUnsafeBufferPointer { buffer in
                String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
            throw ServiceError(code: .processLaunchFailed, operation: "enter the analysis sandbox",
                               message: "the analysis worker could not confine itself and must not analyse anything",
                               cause: cause)
        }
    }
}
