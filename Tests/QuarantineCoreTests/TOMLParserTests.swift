import Foundation
import Testing
@testable import QuarantineCore

/// The configuration's TOML reader: the whole of TOML 1.0, every malformed text an error naming
/// its line, never a trap (issue 29; what `make fuzz` found in TOMLKit, issue 16).
@Suite("TOML parser")
struct TOMLParserTests {
    static let regressions = SettingsTests.repositoryRoot.appendingPathComponent("Tests/Fuzz/regressions/config")

    func parse(_ text: String) throws(TOMLParser.ParseError) -> TOMLTable { try TOMLParser.parse(text) }

    @Test("the fuzzer's inputs that made toml++ assert (abort) are errors naming a line")
    func crashInputs() throws {
        let inputs = try FileManager.default.contentsOfDirectory(atPath: Self.regressions.path).sorted()
        #expect(inputs.count >= 7)
        for name in inputs {
            let bytes = try [UInt8](Data(contentsOf: Self.regressions.appendingPathComponent(name)))
            let error = #expect(throws: Settings.ConfigurationError.self, "\(name)") {
                try Settings().applying(toml: String(decoding: bytes, as: UTF8.self), from: name)
            }
            #expect(error?.line != nil, "\(name): \(String(describing: error))")
        }
        let header = #expect(throws: Settings.ConfigurationError.self) { try Settings().applying(toml: "mode = \"adult\"\n[\u{FFFD}]\n", from: "c.toml") }
        #expect(header?.description.hasPrefix("c.toml:2: ") == true, "\(String(describing: header))")
        let key = #expect(throws: Settings.ConfigurationError.self) { try Settings().applying(toml: "mode = \"adult\"\nclé = 1\n", from: "c.toml") }
        #expect(key?.line == 2)
        for bad in ["x = 1979-05-27Tx07:32:00Z\n", "x = 1979-05-27T07:3\n", "x = 1979-13-01\n", "x = 25:00:00\n"] {
            #expect(throws: TOMLParser.ParseError.self, "\(bad)") { try parse(bad) }
        }
        #expect(try parse("x = 1979-05-27T07:32:00Z\ny = 2\n")["y"]?.int == 2)
    }

    @Test("hostile texts: deep nesting, huge numbers, control characters, lone CR, NUL, unclosed strings; each an error, the process goes on")
    func hostileTexts() throws {
        let deep = "a = " + String(repeating: "[", count: 100_000)
        #expect(throws: TOMLParser.ParseError.self) { try parse(deep) }
        let deepTables = "a = " + String(repeating: "{b = ", count: 50_000)
        #expect(throws: TOMLParser.ParseError.self) { try parse(deepTables) }
        #expect(try parse("a = " + String(repeating: "[", count: 32) + String(repeating: "]", count: 32))["a"] != nil)
        for bad in ["a = 9223372036854775808", "a = -9223372036854775809", "a = 0xFFFFFFFFFFFFFFFFF", "a = \"x\u{01}\"", "a = 1\r", "a = 1\rb = 2",
                    "a = \"x\u{0}\"", "a = \"unclosed", "a = '''never", "a = \"\"\"never", "# c\u{7F}\n", "a = \"\\q\"", "a = \"\\uD800\"",
                    "a = 01", "a = 1__0", "a = _1", "a = 1.", "a = .5", "a = 1e", "a = +0x1", "a = truee", "a = 1 2", "= 1", "a.= 1",
                    "a = {b = 1,}", "a = {b = 1\n}", "a = [1 2]", "[a", "[[a]", "[]", "a = ", "a"] {
            #expect(throws: TOMLParser.ParseError.self, "\(bad.debugDescription)") { try parse(bad) }
        }
        #expect(try parse("a = 9223372036854775807")["a"]?.int == Int.max)
        #expect(try parse("a = -9223372036854775808")["a"]?.int == Int.min)
    }

    @Test("TOML's rules on defining things twice")
    func redefinitions() throws {
        for bad in ["a = 1\na = 2", "[t]\n[t]", "[t]\nx = 1\n[t]", "a.b = 1\n[a.b]", "[a]\nb.c = 1\n[a.b]", "a = {b = 1}\n[a]", "a = {b = 1}\na.c = 2",
                    "a = [1]\n[[a]]", "[[a]]\n[a]", "a.b = 1\na.b.c = 2", "\"a\" = 1\na = 2", "a = 1\n[a.b]"] {
            let error = #expect(throws: TOMLParser.ParseError.self, "\(bad.debugDescription)") { try parse(bad) }
            #expect(error?.line == bad.split(separator: "\n", omittingEmptySubsequences: false).count, "\(bad.debugDescription): \(String(describing: error))")
        }
        // What TOML allows: a header implied first and defined later, sub-tables of dotted tables, arrays of tables.
        let table = try parse("[a.b]\nx = 1\n[a]\ny = 2\n[c]\nd.e = 1\n[c.d.f]\ng = 3\n[[p]]\nn = 1\n[[p]]\nn = 2\n[p.q]\nr = 3\n")
        #expect(table["a"]?.table?["b"]?.table?["x"]?.int == 1)
        #expect(table["a"]?.table?["y"]?.int == 2)
        #expect(table["c"]?.table?["d"]?.table?["f"]?.table?["g"]?.int == 3)
        #expect(table["p"]?.array?.count == 2)
        #expect(table["p"]?.array?.last?.table?["q"]?.table?["r"]?.int == 3)
    }

    @Test("every value form of TOML 1.0, with the line each starts on")
    func valueForms() throws {
        let text = #"""
            # comment
            int = +1_000
            hex = 0xDEAD_beef
            oct = 0o755
            bin = 0b1101
            neg = -17
            zero = 0
            flt = 6.626e-34
            exp = 1E6
            under = 9_224.617_5
            pinf = +inf
            ninf = -inf
            nan = nan
            yes = true
            odt = 1979-05-27T00:32:00.999999-07:00
            ldt = 1979-05-27 07:32:00
            ld = 1979-05-27
            lt = 07:32:00.5
            basic = "tab\there \"q\" \u00E9 \U0001F600 back\\slash"
            literal = 'C:\Users\nodejs\templates'
            multi = """
            Roses are red\
                  violets are blue
            two quotes: "" end"""
            five = """x"""""
            lit = '''
            first line
            'quoted' '''
            'quoted key' = 1
            "" = 2
            dotted . key = 3
            inline = { a = 1, b.c = [1, "two", { d = 3 }] }
            empty = []
            nested = [ [1, 2], ["a"], [], ]
            multiline = [
              1, # one
              2
            ]
            """#
        let t = try parse(text)
        #expect(t["int"]?.int == 1000 && t["int"]?.line == 2)
        #expect(t["hex"]?.int == 0xDEADBEEF)
        #expect(t["oct"]?.int == 0o755)
        #expect(t["bin"]?.int == 13)
        #expect(t["neg"]?.int == -17 && t["zero"]?.int == 0)
        #expect(t["flt"]?.double == 6.626e-34)
        #expect(t["exp"]?.double == 1e6)
        #expect(t["under"]?.double == 9224.6175)
        #expect(t["pinf"]?.double == .infinity && t["ninf"]?.double == -.infinity && t["nan"]?.double?.isNaN == true)
        #expect(t["yes"]?.bool == true)
        #expect(t["odt"]?.kind == .dateTime("1979-05-27T00:32:00.999999-07:00"))
        #expect(t["ldt"]?.kind == .dateTime("1979-05-27 07:32:00"))
        #expect(t["ld"]?.kind == .dateTime("1979-05-27") && t["lt"]?.kind == .dateTime("07:32:00.5"))
        #expect(t["basic"]?.string == "tab\there \"q\" é 😀 back\\slash")
        #expect(t["literal"]?.string == #"C:\Users\nodejs\templates"#)
        #expect(t["multi"]?.string == "Roses are redviolets are blue\ntwo quotes: \"\" end")
        #expect(t["multi"]?.line == 21)
        #expect(t["five"]?.string == "x\"\"")
        #expect(t["lit"]?.string == "first line\n'quoted' ")
        #expect(t["quoted key"]?.int == 1 && t[""]?.int == 2)
        #expect(t["dotted"]?.table?["key"]?.int == 3)
        #expect(t["inline"]?.table?["b"]?.table?["c"]?.array?.last?.table?["d"]?.int == 3)
        #expect(t["empty"]?.array == [])
        #expect(t["nested"]?.array?.count == 3)
        #expect(t["multiline"]?.array?.map(\.int) == [1, 2])
        #expect(t["multiline"]?.array?.last?.line == 37)
        #expect(t.keys.first == "int")
    }

    @Test("characters outside ASCII: in strings and comments; refused in a bare key")
    func unicodeInStringsAndComments() throws {
        let text = """
            # Zoë's computer — réglages
            mode = "child" # ünïcode after a value
            [agent]
            help_page = "file:///home/zoë/aide \\"ç\\".html"
            browser_profiles = ['/home/zoë/.config/chromium/Défaut', \"\"\"
            /home/zoë/firefox/ø\"\"\", '''/home/zoë/ß''']
            """
        let settings = try Settings().applying(toml: text, from: "c.toml")
        #expect(settings.mode == .child)
        #expect(settings.agent.helpPage == "file:///home/zoë/aide \"ç\".html")
        #expect(settings.agent.browserProfiles == ["/home/zoë/.config/chromium/Défaut", "/home/zoë/firefox/ø", "/home/zoë/ß"])
        #expect(throws: TOMLParser.ParseError.self) { try parse("zoë = 1") }
        #expect(try parse("\"zoë\" = 1")["zoë"]?.int == 1)
        #expect(try parse("a = 1\r\nb = \"x\"\r\n")["b"]?.line == 2, "CRLF lines")
    }

    @Test("tomlString: a folder with a tab, a newline, U+0001, DEL, quotes and backslashes round-trips through the file (guardian enable wrote an invalid file for such a name)")
    func tomlStringEscapesControlCharacters() throws {
        let folders = ["/home/sam/Down\tloads\u{01}", "/home/sam/a\nb\r", "/home/sam/q\"uo\\te\u{7F}", "/home/sam/Téléchargements"]
        let text = "[watch]\nincoming = \(ConfigurationFile.tomlArray(folders))\n"
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "no raw control character in \(text.debugDescription)")
        let settings = try Settings().applying(toml: text, from: "USER.toml")
        #expect(settings.watch.incoming == folders)
    }
}
