import MediaDecoding
import SensitivityAnalysis

/// The configuration file's one schema: every table and key, what each takes, its default, why,
/// and how it maps onto ``Settings``.
///
/// Everything about the file comes from here: reading and checking a file
/// (``settings(from:over:path:)``, errors naming the file's line), `config show`
/// (``shown(_:environment:)``), the conffile `etc/quarantine/config.toml` (``conffile()``, a test
/// checks the shipped file is this text) and `docs/configuration.md` (``markdown()``, the same).
/// The defaults are ``Settings``'s own (`Settings()`), rendered through ``ConfigurationKey/value``;
/// a test reads the generated conffile back and finds `Settings()` again.
public enum ConfigurationSchema {
    /// The tables, in the conffile's order.
    public static let sections: [ConfigurationSection] = [top, watch, agent, analysis]
        + AnalysisMode.allCases.flatMap(policySections) + [video, containers]

    /// The section of a table (`policy.adult.labels`), if the configuration has it.
    public static func section(_ table: String) -> ConfigurationSection? { sections.first { $0.table == table } }

    /// Tables that hold only other tables (`policy`).
    static let parents: Set<String> = Set(sections.flatMap { section in
        let parts = section.table.split(separator: ".")
        return (1..<max(1, parts.count)).map { parts.prefix($0).joined(separator: ".") }
    })

    // MARK: - Reading a file

    /// `base` with the values of `table` (a parsed file at `path`) applied over it. Unknown
    /// tables and keys, and values a key does not take, are errors naming the line.
    public static func settings(from table: TOMLTable, over base: Settings, path: String) throws(Settings.ConfigurationError) -> Settings {
        var result = base
        try apply(table, at: "", to: &result, path: path)
        return result
    }

    static func apply(_ table: TOMLTable, at name: String, to settings: inout Settings, path: String) throws(Settings.ConfigurationError) {
        func fail(_ line: Int, _ message: String) -> Settings.ConfigurationError { .init(path: path, line: line, message: message) }
        let section = self.section(name)
        for key in table.keys {
            guard let value = table[key] else { continue }
            let full = name.isEmpty ? key : "\(name).\(key)"
            if let labels = section?.labelsOf {
                guard NudeDetector.labels.contains(key) else {
                    throw fail(value.line, "\(full): unknown NudeNet label \(key); known: \(NudeDetector.labels.joined(separator: ", "))")
                }
                guard let checked = labelRule.check(value) else {
                    throw fail(value.line, "\(full) must be \(labelRule.requirement) (NudeNet reports nothing below 0.2)")
                }
                settings.policies[labels, default: .defaults(for: labels)].labelThresholds[key] = checked.double
                continue
            }
            if let known = section?.key(key) {
                guard let checked = known.rule.check(value) else {
                    throw fail(value.line, "\(full) must be \(known.rule.requirement), not \(value.shortText)")
                }
                known.apply(checked, &settings)
                continue
            }
            if let sub = value.table, self.section(full) != nil || parents.contains(full) {
                try apply(sub, at: full, to: &settings, path: path)
                continue
            }
            if self.section(full) != nil || parents.contains(full) {
                throw fail(value.line, "\(full) must be a table ([\(full)])")
            }
            let known = (section?.keys.map(\.name) ?? []) + sections.compactMap { s -> String? in
                guard s.table.hasPrefix(name.isEmpty ? "" : name + "."), !s.table.isEmpty else { return nil }
                let rest = s.table.dropFirst(name.isEmpty ? 0 : name.count + 1)
                return rest.contains(".") ? nil : "[\(s.table)]"
            } + parents.filter { $0.hasPrefix(name.isEmpty ? "" : name + ".") && !$0.dropFirst(name.isEmpty ? 0 : name.count + 1).contains(".") }.sorted().map { "[\($0).…]" }
            throw fail(value.line, "\(value.table == nil ? "unknown key" : "unknown table") \(full)\(known.isEmpty ? "" : "; known here: \(known.joined(separator: ", "))")")
        }
    }

    static let labelRule = ConfigurationRule.number(0.2...1, orOff: true)

    // MARK: - The settings as a file

    /// The settings as tables of values in the file's form (what `config show --json` prints and
    /// what the conffile writes), in the schema's order; keys left out have no value (defaults).
    public static func values(of settings: Settings, environment: [String: String]? = nil) -> [(table: String, entries: [(key: String, value: ConfigurationValue, note: String?)])] {
        sections.map { section in
            if let mode = section.labelsOf {
                let policy = settings.policies[mode] ?? .defaults(for: mode)
                let order = labelOrder(mode)
                // A default label left out is written `false` (off), so that the entries, as a file, give these settings.
                let names = Set(policy.labelThresholds.keys).union(SensitivityPolicy.defaults(for: mode).labelThresholds.keys)
                let labels = names.sorted { (order.firstIndex(of: $0) ?? 99, $0) < (order.firstIndex(of: $1) ?? 99, $1) }
                return (section.table, labels.map { ($0, policy.labelThresholds[$0].map(ConfigurationValue.number) ?? .off, nil) })
            }
            return (section.table, section.keys.compactMap { key in
                if let environment, let shown = key.shown?(settings, environment) {
                    return shown.value.map { (key.name, $0, shown.note) }
                }
                return key.value(settings).map { (key.name, $0, nil) }
            })
        }
    }

    /// The conffile's order of the labels: the exposed parts, then the covered ones.
    static func labelOrder(_ mode: AnalysisMode) -> [String] {
        ["FEMALE_GENITALIA_EXPOSED", "MALE_GENITALIA_EXPOSED", "ANUS_EXPOSED", "FEMALE_BREAST_EXPOSED", "BUTTOCKS_EXPOSED",
         "FEMALE_GENITALIA_COVERED", "ANUS_COVERED"]
    }
}

// MARK: - The tables

extension ConfigurationSchema {
    static let top = ConfigurationSection("", keys: [
        ConfigurationKey("mode", .choice(AnalysisMode.allCases.map(\.rawValue)), comment: [
            "\"adult\": brief notices, you decide.  \"child\": stricter thresholds, plain words, and a",
            "guardian PIN is needed to release anything or to leave child mode.",
        ], apply: { v, s in s.mode = v.string.flatMap(AnalysisMode.init(rawValue:)) ?? s.mode }, value: { .string($0.mode.rawValue) }),
    ])

    static let watch = ConfigurationSection("watch", keys: [
        ConfigurationKey("incoming", .list("folders"), comment: [
            "Where media arrives: what lands here (and in folders below) is checked by `quarantine agent`.",
            "Leave `incoming` out to watch your download folder (`xdg-user-dir DOWNLOAD`, or ~/Downloads).",
        ], example: "[\"~/Downloads\", \"~/Pictures/Received\"]",
        apply: { v, s in s.watch.incoming = v.strings }, value: { $0.watch.incoming.map(ConfigurationValue.strings) },
        shown: { s, env in (.strings(s.watch.roots(mode: .adult, environment: env).map(\.path)), s.watch.incoming == nil ? "default: your download folder" : nil) }),
        ConfigurationKey("outgoing", .list("folders"), comment: [
            "Shared or synced folders, checked before what is put there leaves: watched in child mode only.",
        ], apply: { v, s in s.watch.outgoing = v.strings ?? [] }, value: { .strings($0.watch.outgoing) },
        shown: { s, env in (.strings(s.watch.outgoing.map { WatchSettings.expand($0, environment: env) }), s.mode == .adult && !s.watch.outgoing.isEmpty ? "child mode only" : nil) }),
        ConfigurationKey("exclude", .list("file or folder names"), comment: [
            "File and folder names never looked at. None by default: a picture inside `node_modules`, `.git`",
            "or `.cache` in your download folder arrived like any other. (The vault is never watched.)",
            "For example: exclude = [\".git\", \"node_modules\"]",
        ], apply: { v, s in s.watch.exclude = v.strings ?? [] }, value: { .strings($0.watch.exclude) }),
    ])

    static let agent = ConfigurationSection("agent", keys: [
        ConfigurationKey("notifications", .flag, comment: [
            "A desktop notification for each hidden item (log only when there is no desktop session).",
        ], apply: { v, s in s.agent.notifications = v.bool ?? true }, value: { .bool($0.agent.notifications) }),
        ConfigurationKey("settle_ms", .whole(0...60_000, unit: "milliseconds"), comment: [
            "A new file must keep its size and modification time this long before it is checked.",
        ], apply: { v, s in s.agent.settleMilliseconds = v.int ?? 100 }, value: { .int($0.agent.settleMilliseconds) }),
        ConfigurationKey("rescan_seconds", .whole(5...86_400, unit: "seconds"), comment: [
            "Folders inotify cannot watch (the kernel's watch limit is reached) are rescanned this often.",
        ], apply: { v, s in s.agent.rescanSeconds = v.int ?? 60 }, value: { .int($0.agent.rescanSeconds) }),
        ConfigurationKey("sandbox", .flag, comment: [
            "Files are judged in a confined worker process (its own account where the worker launcher",
            "runs, no network, no file access once the models are loaded, a system-call allow-list).",
            "false runs the models inside the agent: a crash in a decoder then costs the agent.",
        ], apply: { v, s in s.agent.sandbox = v.bool ?? true }, value: { .bool($0.agent.sandbox) }),
        ConfigurationKey("file_deadline_seconds", .whole(1...86_400, unit: "seconds"), comment: [
            "A file with neither a verdict nor progress for this long has hung its worker, which is",
            "replaced; the file is tried once more, alone, then handled by its policy's on_error.",
        ], apply: { v, s in s.agent.fileDeadlineSeconds = v.int ?? 120 }, value: { .int($0.agent.fileDeadlineSeconds) }),
        ConfigurationKey("worker_idle_seconds", .whole(0...86_400, unit: "seconds"), comment: [
            "The analysis worker (the confined process that holds the models, about 100 MB) starts with",
            "the first file, ends after this many seconds without a file to check, and the next file",
            "starts it again (a fraction of a second; docs/performance.md, \"What it costs while nothing",
            "happens\"). 0 keeps it, once started, for as long as the agent runs.",
        ], apply: { v, s in s.agent.workerIdleSeconds = v.int ?? 60 }, value: { .int($0.agent.workerIdleSeconds) },
        shown: { s, _ in (.int(s.agent.workerIdleSeconds), s.agent.workerIdleSeconds == 0 ? "the worker is never ended" : nil) }),
        ConfigurationKey("hold_while_checking", .flag, comment: [
            "Adult mode: a settled file is moved out of reach until its verdict, as child mode always",
            "does (no window in which it can be opened before it is judged); false leaves it in place",
            "while it is checked.",
        ], apply: { v, s in s.agent.holdWhileChecking = v.bool ?? false }, value: { .bool($0.agent.holdWhileChecking) }),
        ConfigurationKey("browser_history", .flag, comment: [
            "Where a download came from ('quarantine show' names the site, 'block --origin' blocks it):",
            "wget and curl --xattr record it on the file; Chromium, Chrome, Brave, Edge, Vivaldi and",
            "Firefox do not, so their download history is read (read-only, never changed) to find it.",
        ], apply: { v, s in s.agent.browserHistory = v.bool ?? true }, value: { .bool($0.agent.browserHistory) }),
        ConfigurationKey("browser_profiles", .list("folders"), comment: [
            "More browser profile folders to read, each holding History or places.sqlite.",
        ], example: "[\"~/.config/chromium/Profile 3\"]",
        apply: { v, s in s.agent.browserProfiles = v.strings ?? [] }, value: { $0.agent.browserProfiles.isEmpty ? nil : .strings($0.agent.browserProfiles) },
        shown: { s, _ in (.strings(s.agent.browserProfiles), nil) }),
        ConfigurationKey("help_page", .text("a file path or a URL"), comment: [
            "The page \"Get help\" opens in child mode; without it, a built-in page with ways to talk to",
            "someone. A local file or a URL.",
        ], example: "\"/usr/share/doc/quarantine/help.html\"",
        apply: { v, s in s.agent.helpPage = v.string }, value: { $0.agent.helpPage.map(ConfigurationValue.string) }),
        ConfigurationKey("app_analysis", .flag, comment: [
            "Applications may ask the agent whether a picture, a video or a live stream is sensitive, over",
            "the session bus (io.github.quarantine.Analysis1, docs/dbus.md); false tells them analysis is",
            "\"disabled\". In child mode they always get the child's policy (\"descriptive\").",
        ], apply: { v, s in s.agent.appAnalysis = v.bool ?? true }, value: { .bool($0.agent.appAnalysis) }),
    ])

    static let analysis = ConfigurationSection("analysis", keys: [
        ConfigurationKey("workers", .whole(0...256, unit: "files"), comment: [
            "Files analysed at once; 0 = one per CPU core. Measured on 2 cores: one worker per core with",
            "one ONNX Runtime thread each beats one worker with 2 ORT threads (docs/performance.md, \"Threads\").",
        ], apply: { v, s in s.analyzer.workers = (v.int ?? 0) == 0 ? SensitivityAnalyzer.Configuration().workers : v.int ?? 1 },
        value: { .int($0.analyzer.workers == SensitivityAnalyzer.Configuration().workers ? 0 : $0.analyzer.workers) },
        shown: { s, _ in (.int(s.analyzer.workers), nil) }),
        ConfigurationKey("intra_op_threads", .whole(0...256, unit: "threads"), comment: [
            "ONNX Runtime's threads for one file (0: its own choice).",
        ], apply: { v, s in s.analyzer.intraOpThreads = v.int ?? 1 }, value: { .int($0.analyzer.intraOpThreads) }),
        ConfigurationKey("max_dimension", .whole(0...1_000_000, unit: "pixels"), comment: [
            "Pictures larger than this are refused before decoding (a 60000x60000 PNG is refused at once).",
        ], apply: { v, s in s.analyzer.limits.maxDimension = v.int ?? 30_000 }, value: { .int($0.analyzer.limits.maxDimension) }),
        ConfigurationKey("max_megapixels", .whole(0...1_000_000, unit: "megapixels"), comment: [
            "Pictures with more pixels than this are refused before decoding.",
        ], apply: { v, s in s.analyzer.limits.maxPixels = (v.int ?? 200) * 1_000_000 }, value: { .int($0.analyzer.limits.maxPixels / 1_000_000) }),
        ConfigurationKey("max_image_file_mib", .whole(0...1_048_576, unit: "MiB"), comment: [
            "Picture files larger than this are refused before decoding.",
        ], apply: { v, s in s.analyzer.limits.maxImageFileBytes = (v.int ?? 256) << 20 }, value: { .int($0.analyzer.limits.maxImageFileBytes >> 20) }),
        ConfigurationKey("max_video_file_gib", .whole(1...1_048_576, unit: "GiB"), comment: [
            "Video files larger than this are refused before they are read (each video is hashed whole",
            "before its frames are sampled). Refused, on_error decides: child mode holds it as unverified",
            "without reading it. The default passes over an hour of 4K video.",
        ], apply: { v, s in s.analyzer.limits.maxVideoFileBytes = Int64(v.int ?? 32) << 30 }, value: { .int(Int($0.analyzer.limits.maxVideoFileBytes >> 30)) }),
        ConfigurationKey("decode_memory_mib", .whole(16...1_048_576, unit: "MiB"), comment: [
            "Memory all pictures being decoded at once may use together (file bytes plus decoder memory).",
            "Large pictures wait for each other; PNGs over 16 megapixels and TIFFs are decoded row by row",
            "(strip by strip) and reduced on the way, so even 14000x14000 needs a few MiB. A picture that",
            "needs more than this on its own (a progressive JPEG or a GIF/WebP/BMP of more than about 60",
            "megapixels) is refused and goes through on_error.",
        ], apply: { v, s in s.analyzer.limits.decodeMemoryBytes = (v.int ?? 256) << 20 }, value: { .int($0.analyzer.limits.decodeMemoryBytes >> 20) }),
    ])

    static let video = ConfigurationSection("video", keys: [
        ConfigurationKey("max_gap", .number(0.1...60, unit: "seconds"), comment: [
            "At most this many seconds between analysed frames. Keyframes spread over the whole video are",
            "analysed first (a flagged video is usually known within seconds), then the stretches between",
            "them are filled in from their keyframes, skipping what a sample does not need. Smaller is more",
            "thorough and slower.",
        ], apply: { v, s in s.video.maxGap = v.double ?? 2 }, value: { .number($0.video.maxGap) }),
        ConfigurationKey("decoders", .whole(0...2, unit: "decoders"), comment: [
            "Decoders working on one video at once: 0 = automatic (two with two workers, keyframes farther",
            "apart than max_gap and frames up to 1080p; else one), or 1 or 2. A second decoder costs 20-60 MB.",
        ], apply: { v, s in s.video.decoders = (v.int ?? 0) == 0 ? nil : v.int }, value: { .int($0.video.decoders ?? 0) },
        shown: { s, _ in (.int(s.video.decoders ?? 0), s.video.decoders == nil ? "automatic" : nil) }),
    ])

    static func containerKey(_ name: String, _ range: ClosedRange<Int>, _ unit: String, _ comment: [String],
                             _ keyPath: WritableKeyPath<ContainerLimits, Int> & Sendable) -> ConfigurationKey {
        ConfigurationKey(name, .whole(range, unit: unit), comment: comment,
                         apply: { v, s in s.analyzer.limits.containers[keyPath: keyPath] = v.int ?? 0 },
                         value: { .int($0.analyzer.limits.containers[keyPath: keyPath]) })
    }

    static func containerMiB(_ name: String, _ range: ClosedRange<Int>, _ comment: [String],
                             _ keyPath: WritableKeyPath<ContainerLimits, Int64> & Sendable) -> ConfigurationKey {
        ConfigurationKey(name, .whole(range, unit: "MiB"), comment: comment,
                         apply: { v, s in s.analyzer.limits.containers[keyPath: keyPath] = Int64(v.int ?? 0) << 20 },
                         value: { .int(Int($0.analyzer.limits.containers[keyPath: keyPath] >> 20)) })
    }

    static let containers = ConfigurationSection("containers", comment: [
        "Archives (zip, tar, tar.gz/.xz/.zst/.bz2, 7z, RAR), the documents built on zip (EPUB, CBZ, DOCX,",
        "ODT, PPTX...) and PDFs: every picture and video inside is judged, nothing is ever extracted to",
        "disk, and the container is hidden (or released) as one file. Going over a bound below is an",
        "error with its reason, and on_error decides (child mode: held as unverified).",
    ], keys: [
        containerKey("entries", 1...1_000_000, "entries", ["Entries read from one container, nested ones included."], \.maxEntries),
        containerMiB("expanded_mib", 1...1_048_576, ["MiB decompressed from one container, nested ones included."], \.maxExpandedBytes),
        containerKey("ratio", 2...100_000, "times", [
            "Decompressed bytes per byte of the file read so far, checked after the first 32 MiB: an",
            "archive bomb is refused while it expands (photos compress about 1:1, text about 5:1).",
        ], \.maxExpansionRatio),
        containerKey("depth", 0...16, "levels", ["Containers inside containers (a zip in a zip is depth 1)."], \.maxDepth),
        containerMiB("entry_mib", 1...65_536, [
            "The largest video or nested container inside, copied into memory to be judged (pictures:",
            "analysis.max_image_file_mib).",
        ], \.maxEntryBytes),
        containerKey("pages", 1...100_000, "pages", [
            "PDF: every page of the first all_pages is judged, then an even spread over the rest, pages in",
            "all (coverage is reported, as for videos).",
        ], \.maxPages),
        containerKey("all_pages", 0...100_000, "pages", ["PDF: every page up to here is judged."], \.pdfAllPages),
        containerKey("seconds", 1...86_400, "seconds", [
            "Seconds for one container, nested ones included (a 500-photo album takes about 30 s here;",
            "every entry has its own bounds too).",
        ], \.maxSeconds),
    ])
}
