import ArgumentParser
import Foundation
import GuardianAPI
import PathBytes
import QuarantineBackend
import QuarantineCore
import QuarantineStore
import SensitivityAnalysis
import ServiceSupport

/// Opens the per-user vault, or exits 2 with the reason. Moves a crash interrupted are finished
/// or rolled back first, unless an agent runs or another command is moving a file: recovery is
/// theirs then (see ``Vault/recoverIfIdle()``).
///
/// `readOnly` for the commands that change nothing (`status`, `list`, `show`, `history`,
/// `mode`): the database is opened only to read it, never created or migrated while an agent
/// may be doing so (see ``Vault/standard(environment:readOnly:busyTimeout:)``). Only when its journal
/// holds a move a crash interrupted is it opened for writing (a database set up already: nothing is
/// created or migrated), to recover as above.
func openVault(readOnly: Bool = false) throws -> Vault {
    let vault: Vault
    do { vault = try Vault.standard(readOnly: readOnly) } catch {
        printError("quarantine: cannot open the vault: \(error)")
        throw ExitCode(2)
    }
    for line in vault.tightened { printError("quarantine: made private (others could read it): \(line)") }
    if readOnly {
        guard (try? vault.store.hasUnfinishedMoves()) == true else { return vault }
        return try openVault(readOnly: false)
    }
    do {
        for line in try vault.recoverIfIdle() ?? [] { printError("quarantine: recovered an interrupted move: \(line)") }
    } catch {
        printError("quarantine: cannot recover interrupted moves: \(error)")
        throw ExitCode(2)
    }
    return vault
}

extension VaultItem {
    /// The original path for people (PathBytes.display: `\xFF`, `\n`, `\\`).
    var displayPath: String { PathBytes.display(originalPath) }
}

/// What `list` and `show` print, locally or from a guardian service: the same plain values.
extension GuardianWire.Item {
    /// The original file's name.
    var displayName: String { PathBytes.display(URL(fileURLWithPath: originalPath).lastPathComponent) }

    /// The original path for people (PathBytes.display: `\xFF`, `\n`, `\\`).
    var displayPath: String { PathBytes.display(originalPath) }

    var displaySize: String {
        let units = ["B", "KB", "MB", "GB"]
        var value = Double(size), unit = 0
        while value >= 1000 && unit < units.count - 1 { value /= 1000; unit += 1 }
        return unit == 0 ? "\(size) B" : String(format: "%.1f %@", value, units[unit])
    }
}

/// The item `id`, fetched through `backend` before anything is asked about it (exit 2 when
/// there is none); its preview descriptor, if one came, is closed.
func shownItem(_ backend: any QuarantineBackend, _ id: Int64) throws -> GuardianWire.Item {
    let shown = try serve(backend, GuardianWire.Show(id: id, limit: 1))
    if let preview = shown.preview { close(preview) }
    return shown.answer.item
}

/// `quarantine list`: what is in the vault.
struct List: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List what is in the vault, newest first.",
        discussion: """
        Examples:
          quarantine list
          quarantine list --json | jq -r .original_path

        Exit status: 0 listed (also when the vault is empty), 2 the vault cannot be read.
        """)

    @Flag(name: .long, help: "Print one JSON object per item (JSON Lines).")
    var json = false

    @Flag(name: .long, help: "Also list released, blocked and purged items.")
    var all = false

    @OptionGroup var target: TargetUser

    func run() throws {
        let reply = try serve(try target.backend(), GuardianWire.List(all: all))
        printItems(reply.answer.items, requests: reply.answer.requests, childWording: reply.childWording, all: all, json: json)
    }
}

/// Prints vault items as `list` does: JSON Lines, a child's plain words, or one line each.
func printItems(_ items: [GuardianWire.Item], requests: [Int64: Date], childWording: Bool, all: Bool, json: Bool) {
    if json {
        for item in items { JSONOutput.print(ReviewJSON.Item(item, releaseRequestedAt: requests[item.id])) }
        return
    }
    if items.isEmpty {
        printOut(all ? "The vault has never held anything." : "The vault is empty.")
        return
    }
    let formatter = DateFormatter()
    formatter.dateFormat = "yyyy-MM-dd HH:mm"
    if childWording {
        for item in items {
            let name = URL(fileURLWithPath: item.originalPath).lastPathComponent
            let asked = requests[item.id] == nil ? "" : " You asked a grown-up for it back."
            printOut("\(item.id)  \(formatter.string(from: item.createdAt))  \(name): hidden, because it may show private parts of the body. A grown-up can look at it with you.\(asked)")
        }
        return
    }
    for item in items {
        let reason = item.reasons.first ?? "-"
        let asked = requests[item.id].map { "  [release asked for \(formatter.string(from: $0))]" } ?? ""
        printOut("\(String(item.id).padding(toLength: 5, withPad: " ", startingAt: 0)) \(formatter.string(from: item.createdAt))  \(item.status.padding(toLength: 11, withPad: " ", startingAt: 0)) \(item.displaySize.padding(toLength: 9, withPad: " ", startingAt: 0)) \(item.displayPath)  (\(reason))\(asked)")
    }
}

/// `quarantine show ID`: everything about one item.
struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one item: where it came from, why it was hidden, and its blurred preview.",
        discussion: """
        Examples:
          quarantine show 12
          quarantine show 12 --open
          quarantine show 12 --json

        Exit status: 0 shown, 2 no such item or the vault cannot be read.
        """)

    @Argument(help: "The item's number, from 'quarantine list'.")
    var id: Int64

    @Flag(name: .long, help: "Open the blurred preview (never the original) with xdg-open.")
    var open = false

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    @OptionGroup var target: TargetUser

    func run() throws {
        let backend = try target.backend()
        let reply = try serve(backend, GuardianWire.Show(id: id))
        defer { if let preview = reply.preview { close(preview) } }
        // The person's own vault names the preview's path; a guardian service hands it over as
        // an open descriptor, copied to a private file of this user's.
        var previewPath = reply.answer.previewPath
        if previewPath == nil, let preview = reply.preview {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("quarantine-preview-\(getuid())")
            try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let path = folder.appendingPathComponent("item-\(id).jpg").path
            if let data = Self.contents(of: preview), FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600]) { previewPath = path }
        }
        printItem(reply.answer.item, events: reply.answer.events, preview: previewPath, childWording: reply.childWording, json: json)
        guard open, let shown = previewPath else { return }
        guard reply.answer.previewPath != nil, let preview = reply.preview else { return openPreview(shown) }
        // Never from the vault's folder (viewers browse the folder of what they show, and an
        // item's folder holds the original): a copy in a folder of previews only.
        let environment = ProcessInfo.processInfo.environment
        do {
            let folder = try Review.privateFolder(Review.viewingFolder(base: Vault.baseDirectory(environment: environment), environment: environment))
            let copy = folder + "/quarantine-item-\(id)-preview.jpg"
            unlink(copy)
            guard let data = Self.contents(of: preview), FileManager.default.createFile(atPath: copy, contents: data, attributes: [.posixPermissions: 0o600]) else {
                throw CLIError("cannot copy the preview of item \(id) into \(folder)")
            }
            openPreview(copy)
        } catch {
            printError("quarantine: \(error)")
            throw ExitCode(2)
        }
    }

    /// What the descriptor `fd` reads, from its start (it stays open).
    static func contents(of fd: Int32) -> Data? {
        guard lseek(fd, 0, SEEK_SET) == 0 else { return nil }
        return FileHandle(fileDescriptor: dup(fd), closeOnDealloc: true).readDataToEndOfFile()
    }
}

/// Prints one item as `show` does.
func printItem(_ item: GuardianWire.Item, events: [GuardianWire.Event], preview: String?, childWording: Bool, json: Bool) {
    let id = item.id
    if json {
        JSONOutput.print(ReviewJSON.Item(item, preview: preview, events: events.map(ReviewJSON.ItemEvent.init)))
        return
    }
    if childWording {
        printOut("This was hidden because it may show private parts of the body. Hiding it keeps you safe.")
        printOut(Interventions.help)
    }
    printOut("Item \(id): \(item.status)")
    printOut("  from      \(item.displayPath)")
    printOut("  hidden    \(item.createdAt) (\(item.analysisMode.rawValue) mode)")
    printOut("  why       \(item.reasons.joined(separator: ", "))")
    printOut("  size      \(item.displaySize), sha256 \(item.sha256)")
    if let origin = item.originURL { printOut("  origin    \(origin)") }
    if let referrer = item.referrerURL { printOut("  referrer  \(referrer)") }
    printOut("  preview   \(preview ?? "(none)")")
    for event in events.reversed() {
        printOut("  \(event.at)  \(event.kind) by \(event.actor)\(event.detail.map { ": \($0)" } ?? "")")
    }
}

/// Opens the blurred preview (never the original: a copy in a folder of previews only, since
/// viewers browse the folder of what they show) in the desktop's image viewer.
func openPreview(_ path: String) {
    if let problem = DetachedProgram.openOnDesktop(path, environment: ProcessInfo.processInfo.environment) {
        printError("cannot open the preview (it is at \(path)): \(problem)")
    }
}

/// `quarantine release ID`: puts a file back exactly as it was.
struct ReleaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "release",
        abstract: "Put a file back where it was (or --to DIR), exactly as it was. Nothing is overwritten.",
        discussion: """
        Its contents are then allowed: the same bytes are never flagged again.

        Examples:
          quarantine release 12
          quarantine release 12 --to ~/Desktop

        Exit status: 0 put back, 1 refused (not sure, or child mode without the guardian PIN), 2 no such item or it could not be put back (nothing is overwritten).
        """)

    @Argument(help: "The item's number, from 'quarantine list'.")
    var id: Int64

    @Option(name: .long, help: ArgumentHelp("Restore into this folder instead of the original one.", valueName: "dir"))
    var to: String?

    @Flag(name: [.short, .long], help: "Do not ask for confirmation.")
    var yes = false

    @Flag(name: .long, help: "Child mode: ask the guardian to release it, without the PIN. The request is recorded and shown in 'quarantine list'; nothing is released. (Pressing Enter at the PIN prompt does the same.)")
    var ask = false

    @OptionGroup var target: TargetUser

    func run() throws {
        let backend = try target.backend()
        let saved = "Your question is saved. A grown-up will see it in 'quarantine list' and can look at the picture with you."
        if ask {
            _ = try serve(backend, GuardianWire.Ask(id: id))
            printOut(saved)
            return
        }
        // The item must exist before anyone is asked anything.
        let item = try shownItem(backend, id)
        let session = try serve(backend, GuardianWire.Hello())
        let pin = try Interventions.approve(.release, verb: .release, session: session, adultQuestion: "Release \(item.displayName) (\(item.reasons.first ?? "flagged"))?",
                                            childAction: "bring it back", yes: yes) {
            _ = try serve(backend, GuardianWire.Ask(id: id))
            printOut(saved)
        }
        let released = try serve(backend, GuardianWire.Release(id: id, pin: pin, to: to)).answer
        let path = PathBytes.display(released.path)
        printOut(released.renamed ? "Released to \(path) (\(item.displayPath) was taken; nothing was overwritten)." : "Released to \(path).")
    }
}

/// `quarantine history`: the audit log.
struct History: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "history", abstract: "Show the audit log: every quarantine, release, block and error, newest first.",
        discussion: """
        Examples:
          quarantine history
          quarantine history --json | head -n 20

        Exit status: 0 shown, 2 the audit database cannot be read.
        """)

    @Flag(name: .long, help: "Print one JSON object per event (JSON Lines).")
    var json = false

    @OptionGroup var target: TargetUser

    func run() throws {
        for event in try serve(try target.backend(), GuardianWire.History()).answer.events {
            if json {
                JSONOutput.print(ReviewJSON.Event(event))
            } else {
                printOut("\(event.at)  \(event.kind.padding(toLength: 11, withPad: " ", startingAt: 0)) \(event.itemId.map { "#\($0) " } ?? "")\(event.path.map(PathBytes.display) ?? "")\(event.detail.map { "  (\($0))" } ?? "")")
            }
        }
    }
}

/// `quarantine block ID`: gets rid of it for good, and of the same bytes next time.
struct BlockCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "block",
        abstract: "Delete a quarantined file (or keep it sealed) and block its contents from coming back.",
        discussion: """
        The same bytes arriving again are quarantined without analysis. With --origin, later downloads from the site it came from are quarantined too, whatever they contain.

        Examples:
          quarantine block 12
          quarantine block 12 --keep
          quarantine block 12 --origin

        Exit status: 0 blocked, 1 refused (not sure, or child mode without the guardian PIN), 2 no such item or it could not be done.
        """)

    @Argument(help: "The item's number, from 'quarantine list'.")
    var id: Int64

    @Flag(name: .long, help: "Keep the file sealed in the vault instead of deleting it.")
    var keep = false

    @Flag(name: .long, help: "Also block the site in its origin URL.")
    var origin = false

    @Flag(name: [.short, .long], help: "Do not ask for confirmation.")
    var yes = false

    @OptionGroup var target: TargetUser

    func run() throws {
        let backend = try target.backend()
        let item = try shownItem(backend, id)
        let session = try serve(backend, GuardianWire.Hello())
        let pin = try Interventions.approve(.block, verb: .block, session: session, adultQuestion: "\(keep ? "Seal" : "Delete") \(item.displayName) (\(item.reasons.first ?? "flagged"))?",
                                            childAction: keep ? "lock it away for good" : "delete it", yes: yes)
        let result = try serve(backend, GuardianWire.Block(id: id, pin: pin, keep: keep, origin: origin)).answer
        printOut("\(result.deleted ? "Deleted" : "Sealed") \(item.displayName); the same contents will be quarantined on sight\(result.blockedHost.map { ", and so will downloads from \($0)" } ?? "").")
    }
}

/// `quarantine purge --older-than DAYS`: deletes old items, saying which, never silently.
struct Purge: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Delete vault items older than a number of days: lists them, asks, and records each one.",
        discussion: """
        Examples:
          quarantine purge --older-than 30
          quarantine purge --older-than 90 --yes

        Exit status: 0 done (also when nothing is that old), 1 refused (not sure, or child mode without the guardian PIN), 2 could not be done.
        """)

    @Option(name: .long, help: ArgumentHelp("Only items hidden more than this many days ago.", valueName: "days"))
    var olderThan: Int

    @Flag(name: [.short, .long], help: "Do not ask for confirmation.")
    var yes = false

    @OptionGroup var target: TargetUser

    func validate() throws {
        guard olderThan >= 0 else { throw ValidationError("--older-than must be 0 or more days") }
    }

    func run() throws {
        let backend = try target.backend()
        let items = try serve(backend, GuardianWire.Purge(olderThanDays: olderThan, dryRun: true)).answer.items
        if items.isEmpty {
            printOut("Nothing in the vault is older than \(olderThan) day\(olderThan == 1 ? "" : "s").")
            return
        }
        printOut("These \(items.count) item\(items.count == 1 ? "" : "s") would be deleted for good:")
        for item in items { printOut("  \(item.id)  \(item.createdAt)  \(item.displayPath)") }
        let session = try serve(backend, GuardianWire.Hello())
        let pin = try Interventions.approve(.purge, verb: .purge, session: session, adultQuestion: "Delete them?", childAction: "delete them for good", yes: yes)
        let count = try serve(backend, GuardianWire.Purge(olderThanDays: olderThan, ids: items.map(\.id), pin: pin)).answer.purged
        printOut("Purged \(count) item\(count == 1 ? "" : "s"); each is in 'quarantine history'.")
    }
}
