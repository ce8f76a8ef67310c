#if canImport(Glibc)
import Glibc
#endif

/// Which sanitizer runtime this test process carries (make test-asan, make test-tsan).
public enum Sanitizers {
    /// ThreadSanitizer's runtime is linked in. It cannot start in a child that entered the
    /// analysis sandbox (its runtime maps memory and reads /proc under seccomp's refusals, and
    /// the child exits with 66 before it runs a probe): tests that enter the sandbox in a forked
    /// child are skipped under it, and run in make test and make test-asan.
    public static let thread = dlsym(nil, "__tsan_init") != nil
}
