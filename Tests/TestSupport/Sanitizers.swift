#if canImport(Glibc)
import Glibc
#endif

/// Which sanitizer runtime this test process carries (make test-asan, make test-tsan).
public enum Sanitizers {
    /// ThreadSanitizer's runtime is linked in. The sandbox probe's forked child (C, forked from
    /// the multithreaded test runner) runs no probe under it, sandboxed or not (the sandboxed one
    /// exits with 66): the probe tests are skipped under it, and run in make test and make
    /// test-asan.
    public static let thread = dlsym(nil, "__tsan_init") != nil
}
