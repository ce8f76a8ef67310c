import ArgumentParser
import Foundation
import PathBytes
import MediaDecoding
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis

/// `quarantine scan`: analyses files and folders, read-only.
struct Scan: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Check files and folders for nudity (read-only unless --quarantine).",
        discussion: """
        Folders are scanned recursively; symbolic links are never followed. With --quarantine, flagged \
        files are moved into the vault instead (restorable with 'quarantine release'). The file type comes \
        from the bytes, not the name. Archives (zip, tar and its compressed forms, 7z, RAR), the documents \
        built on zip (EPUB, CBZ, DOCX, ODT...) and PDFs are judged by the pictures and videos inside them \
        (nothing is extracted; the reasons name the entry or page; limits in [containers] of the \
        configuration). On a terminal a progress bar shows count, rate and ETA (not with NO_COLOR set).

        Exit status: 0 nothing flagged, 1 something flagged, 2 usage error or nothing could be analysed.

        Examples:
          quarantine scan ~/Downloads
          quarantine scan --json --mode child photo.jpg | jq .reasons
        """
    )

    @Flag(name: .long, help: "Print one JSON object per file (JSON Lines) instead of text.")
    var json = false

    @Flag(name: [.short, .long], help: "Also list files that are not flagged.")
    var verbose = false

    @Flag(name: .long, help: "Videos: list every flagged time range instead of stopping at the first flagged frame.")
    var all = false

    @Flag(name: .long, help: "Move what is flagged into the vault (see 'quarantine list'); like clamscan --move, but restorable.")
    var quarantine = false

    @OptionGroup var options: AnalysisOptions

    @Argument(help: ArgumentHelp("Files or folders to check.", valueName: "path"))
    var paths: [String]

    mutating func validate() throws {
        if paths.isEmpty { throw ValidationError("Name at least one file or folder to scan.") }
    }

    mutating func run() async throws {
        LoggingSetup.bootstrap(.command)
        let settings: Settings
        do { settings = try options.settings() } catch {
            printError("quarantine: \(error)")
            throw ExitCode(2)
        }
        var walker = FileWalker()
        let entries = walker.expand(paths)
        let files = entries.compactMap { if case .file(let p) = $0 { return p } else { return nil } }

        let analyzer: SensitivityAnalyzer
        do {
            var video = settings.video
            video.allFlaggedRanges = all
            // The models are loaded at the first picture that needs them: none for test cards,
            // files that are no picture, or an empty folder.
            analyzer = try SensitivityAnalyzer(policy: settings.policy, configuration: settings.analyzer, videoOptions: video, loading: .atFirstUse)
        } catch {
            printError("quarantine: cannot analyse: \(error)")
            throw ExitCode(2)
        }

        let vault: Vault? = quarantine ? try openVault() : nil
        let output = ScanOutput(json: json, verbose: verbose)
        let progress = ProgressBar(total: files.count, enabled: mayDecorate(2))
        var tally = ScanTally()
        let start = Date()
        for case .problem(let path, let code, let message) in entries {
            tally.errors += 1
            output.emit(problem: path, code: code, message: message, progress: progress)
        }

        // Keep every worker busy with a small lead, without queueing the whole tree at once.
        let lead = settings.analyzer.workers * 2
        await withTaskGroup(of: FileReport.self) { group in
            var next = 0
            func submit() {
                guard next < files.count else { return }
                let path = files[next]
                next += 1
                group.addTask { await analyzer.report(forFileAt: path) { progress.video(path, $0) } }
            }
            for _ in 0..<min(lead, files.count) { submit() }
            while var report = await group.next() {
                if let vault { await quarantine(&report, vault: vault, analyzer: analyzer) }
                tally.add(report)
                output.emit(report, progress: progress)
                progress.advance(finished: report.path)
                submit()
            }
        }
        progress.clear()
        output.summary(tally, elapsed: Date().timeIntervalSince(start), skippedLinks: walker.skippedLinks)

        if tally.flagged > 0 { throw ExitCode(1) }
        if tally.analysed == 0 && tally.errors > 0 { throw ExitCode(2) }
    }

    /// `--quarantine`: the allow and block lists decide first (as the agent does: the core's
    /// ``ListCheck``), then what is flagged moves into the vault. Every step is recorded.
    func quarantine(_ report: inout FileReport, vault: Vault, analyzer: SensitivityAnalyzer) async {
        guard report.kind != .other, report.failure == nil || report.isSensitive else { return }
        let path = report.path
        let mode = report.analysis?.mode ?? analyzer.policy.mode
        let digest = try? await analyzer.runBlocking { () -> (String, String?) in
            let file = try MediaFile(path: path)
            return (try Vault.sha256(fd: file.descriptor), Vault.originHost(fd: file.descriptor))
        }
        var reasons = report.analysis?.reasons ?? []
        if let (sha256, host) = digest {
            switch try? ListCheck.check(sha256: sha256, originHost: host, mode: mode, store: vault.store, reuseVerdicts: false) {
            case .allowed:
                report.listDecision = "released before (on the allow list): left where it is"
                try? vault.store.record(.analysed, path: path, mode: mode, actor: "scan", detail: "on the allow list: not moved")
                return
            case .blocked(let reason, _):
                report.listDecision = "blocked: \(reason)"
                reasons = ["blocked: \(reason)"] + reasons
            default:
                break
            }
        }
        if let analysis = report.analysis {
            try? vault.store.record(.analysed, path: path, mode: mode, actor: "scan", detail: analysis.isSensitive ? nil : analysis.cleanDetail)
        }
        guard report.isSensitive || report.listDecision != nil else { return }
        do {
            let item = try Intake(vault: vault, engine: analyzer, actor: "scan")
                .hide(path: path, identity: report.analysis?.identity, reasons: reasons, preview: report.flaggedFrame, mode: mode,
                      verdict: report.isSensitive ? .quarantined : .blocked)
            report.vaultItem = item.id
        } catch {
            report.failure = FileReport.Failure(code: "not_quarantined", message: "\(path): flagged but not moved: \(error)")
        }
    }
}

/// Counts for the closing summary and the exit status.
struct ScanTally {
    var analysed = 0, flagged = 0, errors = 0, other = 0

    mutating func add(_ report: FileReport) {
        if report.failure != nil && !report.isSensitive { errors += 1 }
        else if report.kind == .other { other += 1 }
        else {
            analysed += 1
            if report.isSensitive { flagged += 1 }
        }
    }
}

/// Prints reports as text or JSON Lines.
struct ScanOutput {
    let json: Bool
    let verbose: Bool

    /// One JSON Lines record.
    struct Record: Encodable {
        struct JSONDetection: Encodable {
            var label: String
            var score: Double
            var box: [Int]
        }
        /// What a decision rule decided about one raw detection (issue 28).
        struct JSONRuling: Encodable {
            var rule: String
            var outcome: String
            var label: String
            var score: Double
            var box: [Int]
            var threshold: Double
            var recheck_scores: [Double]?
            var skin_fraction: Double?
            var detail: String
        }
        /// PathBytes.display of the path; `path_bytes` has its exact bytes (base64).
        var path: String
        var path_bytes: String
        var kind: String
        var type: String
        var sensitive: Bool
        var reasons: [String]
        /// The models' raw detections (parity with upstream stays checkable).
        var detections: [JSONDetection]
        /// The decision rules that looked at a detection: kept, or let through (absent: none did).
        var rules: [JSONRuling]?
        var nsfw: Double?
        var width: Int?
        var height: Int?
        var mode: String?
        var elapsed_ms: Double
        var error: String?
        var error_code: String?
        // Videos
        var frame_time: Double?
        var samples: Int?
        var skipped_samples: Int?
        var largest_gap: Double?
        /// The sampling rule (`short_clip`: under a minute, every 0.25 s; `standard`: every
        /// `video.max_gap` s; `animation`: every 0.1 s) and the gap it allows.
        var sampling: String?
        var planned_gap: Double?
        var duration: Double?
        var coverage: Double?
        var flagged_ranges: [[Double]]?
        var partial: String?
        // Containers: the pictures and videos judged inside (the flagged one last), and a PDF's
        // pages with how many were judged.
        var entries: [JSONEntry]?
        var document: String?
        var pages: Int?
        var pages_judged: Int?
        var vault_item: Int64?
        var list_decision: String?
    }

    struct JSONEntry: Encodable {
        var name: String
        var type: String
        var sensitive: Bool
        var reasons: [String]
        var error: String?
    }

    static func rounded(_ v: Double, _ digits: Double = 10_000) -> Double { (v * digits).rounded() / digits }

    func record(_ report: FileReport) -> Record {
        let a = report.analysis
        return Record(path: PathBytes.display(report.path), path_bytes: PathBytes.base64(report.path), kind: report.kind.rawValue, type: report.type.rawValue, sensitive: report.isSensitive,
                      reasons: a?.reasons ?? [],
                      detections: (a?.detections ?? []).map {
                          .init(label: $0.label, score: Self.rounded($0.score),
                                box: [Int($0.box.x), Int($0.box.y), Int($0.box.width), Int($0.box.height)])
                      },
                      rules: a?.rulings?.map {
                          .init(rule: $0.rule, outcome: $0.outcome.rawValue, label: $0.label, score: Self.rounded($0.score),
                                box: [Int($0.box.x), Int($0.box.y), Int($0.box.width), Int($0.box.height)], threshold: $0.threshold,
                                recheck_scores: $0.recheckScores?.map { Self.rounded($0) }, skin_fraction: $0.skinFraction.map { Self.rounded($0) },
                                detail: $0.detail)
                      },
                      nsfw: a?.nsfwScore.map { Self.rounded($0) }, width: a?.width, height: a?.height, mode: a?.mode.rawValue,
                      elapsed_ms: Self.rounded(report.elapsedMilliseconds, 10),
                      error: report.failure?.message, error_code: report.failure?.code,
                      frame_time: a?.frameTime.map { Self.rounded($0, 1000) }, samples: a?.samples,
                      skipped_samples: a?.skippedSamples, largest_gap: a?.largestGap.map { Self.rounded($0, 1000) },
                      sampling: a?.samplingRule, planned_gap: a?.plannedGap.map { Self.rounded($0, 1000) },
                      duration: a?.duration.map { Self.rounded($0, 1000) }, coverage: a?.coverage.map { Self.rounded($0, 1000) },
                      flagged_ranges: a?.flaggedRanges?.map { $0.map { Self.rounded($0, 1000) } }, partial: a?.partialReason,
                      entries: a?.entries?.map { JSONEntry(name: $0.name, type: $0.type.rawValue, sensitive: $0.isSensitive, reasons: $0.reasons, error: $0.error) },
                      document: a?.document, pages: a?.pages, pages_judged: a?.pagesJudged,
                      vault_item: report.vaultItem, list_decision: report.listDecision)
    }

    func jsonText(_ record: Record) -> String {
        return JSONOutput.line(record)
    }

    func emit(_ report: FileReport, progress: ProgressBar) {
        if json {
            progress.print(jsonText(record(report)), to: .standardOutput)
            return
        }
        let partial = report.analysis?.partialReason.map { "  [partial: covered \(Int((report.analysis?.coverage ?? 0) * 100))%, \($0)]" } ?? ""
        if let failure = report.failure {
            progress.print("error    \(failure.message)", to: .standardError)
        } else if report.isSensitive, let a = report.analysis {
            var at = a.frameTime.map { " at \(ProgressBar.duration($0))" } ?? ""
            if let ranges = a.flaggedRanges, !ranges.isEmpty {
                at = " at " + ranges.map { "\(ProgressBar.duration($0[0]))-\(ProgressBar.duration($0[1]))" }.joined(separator: ", ")
            }
            let moved = (report.vaultItem.map { "  -> vault #\($0) (quarantine show \($0))" } ?? "") + (report.listDecision.map { "  [\($0)]" } ?? "")
            if a.mode == .child {
                let what = report.kind == .video ? "This video" : report.kind == .container ? "Something in this file" : "This picture"
                let hidden = report.vaultItem != nil ? " It has been hidden to keep you safe; a grown-up can look at it with you." : ""
                progress.print("HIDDEN   \(PathBytes.display(report.path))\(at): \(what) may show private parts of the body.\(hidden) \(Interventions.help)\(partial)", to: .standardOutput)
            } else {
                progress.print("FLAGGED  \(PathBytes.display(report.path))\(at)  (\(a.reasons.joined(separator: ", ")))\(partial)\(moved)", to: .standardOutput)
            }
        } else if let decision = report.listDecision {
            progress.print("BLOCKED  \(PathBytes.display(report.path))  [\(decision)]\(report.vaultItem.map { "  -> vault #\($0) (quarantine show \($0))" } ?? "")", to: .standardOutput)
        } else if verbose || !partial.isEmpty {
            let letThrough = (report.analysis?.rulings ?? []).filter { $0.outcome == .letThrough }.map { "  [\($0.summary)]" }.joined()
            progress.print("ok       \(PathBytes.display(report.path))\(report.kind == .other ? "  (not a picture or video)" : "")\(Self.inside(report.analysis))\(partial)\(letThrough)", to: .standardOutput)
        }
    }

    /// What a clean container held, for `ok` lines: "  (3 pictures or videos inside)", "  (12 of 12 pages)".
    static func inside(_ analysis: SensitivityAnalysis?) -> String {
        guard let analysis, analysis.kind == .container else { return "" }
        if let pages = analysis.pages { return "  (\(analysis.pagesJudged ?? 0) of \(pages) page\(pages == 1 ? "" : "s") judged)" }
        let count = analysis.entries?.count ?? 0
        return count == 0 ? "  (no pictures or videos inside)" : "  (\(count) picture\(count == 1 ? "" : "s") or video\(count == 1 ? "" : "s") inside)"
    }

    func emit(problem path: String, code: String, message: String, progress: ProgressBar) {
        if json {
            progress.print(jsonText(Record(path: PathBytes.display(path), path_bytes: PathBytes.base64(path), kind: "other", type: "other", sensitive: false, reasons: [], detections: [], nsfw: nil,
                                           width: nil, height: nil, mode: nil, elapsed_ms: 0, error: message, error_code: code)), to: .standardOutput)
        } else {
            progress.print("error    \(message)", to: .standardError)
        }
    }

    func summary(_ t: ScanTally, elapsed: Double, skippedLinks: Int) {
        let rate = elapsed > 0 ? Double(t.analysed) / elapsed : 0
        var line = "Scanned \(t.analysed) file\(t.analysed == 1 ? "" : "s") in \(String(format: "%.1f", elapsed)) s (\(String(format: "%.1f", rate))/s): "
        line += "\(t.flagged) flagged, \(t.errors) error\(t.errors == 1 ? "" : "s")"
        if t.other > 0 { line += ", \(t.other) other file\(t.other == 1 ? "" : "s") (not pictures or videos) skipped" }
        if skippedLinks > 0 { line += ", \(skippedLinks) symbolic link\(skippedLinks == 1 ? "" : "s") not followed" }
        if json {
            if isTerminal(2) { printError(line) }
        } else {
            printOut(line)
        }
    }
}
