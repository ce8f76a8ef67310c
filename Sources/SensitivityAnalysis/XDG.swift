#if canImport(Glibc)
import Glibc
#endif

/// The process environment as a dictionary (without Foundation).
public enum ProcessEnvironment {
    public static var current: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let eq = text.firstIndex(of: "=") {
                result[String(text[..<eq])] = String(text[text.index(after: eq)...])
            }
            pointer += 1
        }
        return result
    }
}

/// The XDG base directories.
public enum XDG {
    public static func home(_ env: [String: String]) -> String {
        if let home = env["HOME"], !home.isEmpty { return home }
        if let pw = getpwuid(getuid()), let dir = pw.pointee.pw_dir { return String(cString: dir) }
        return "/"
    }
    public static func dataHome(_ env: [String: String]) -> String {
        env["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home(env) + "/.local/share"
    }
    public static func configHome(_ env: [String: String]) -> String {
        env["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home(env) + "/.config"
    }
}
