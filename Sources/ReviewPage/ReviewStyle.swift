/// The page's one style sheet (served as `/style.css`: the Content-Security-Policy allows no
/// inline style). Colours meet WCAG AA (4.5:1 for text) in the light and the dark scheme, which
/// follows the desktop's preference.
enum ReviewStyle {
    static let css = """
    :root { color-scheme: light dark; --bg: #ffffff; --fg: #1a1a1a; --muted: #4a4a4a; --card: #f3f4f6; --line: #6b6b6b;
      --accent: #0b57d0; --accent-fg: #ffffff; --danger: #a50e0e; --danger-fg: #ffffff; --focus: #b3261e; --note: #fff4d6; --note-fg: #3d2e00; }
    @media (prefers-color-scheme: dark) {
      :root { --bg: #121212; --fg: #ececec; --muted: #c4c4c4; --card: #1f2124; --line: #9a9a9a;
        --accent: #8ab4f8; --accent-fg: #0b0b0b; --danger: #f28b82; --danger-fg: #0b0b0b; --focus: #fdd663; --note: #3a3120; --note-fg: #ffe7a8; }
    }
    * { box-sizing: border-box; }
    body { margin: 0; background: var(--bg); color: var(--fg); font: 1rem/1.5 system-ui, sans-serif; }
    main { max-width: 72rem; margin: 0 auto; padding: 1rem; }
    a { color: var(--accent); }
    :focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
    .skip { position: absolute; left: -999px; } .skip:focus { left: 1rem; top: 1rem; background: var(--bg); padding: .5rem; }
    header nav ul { display: flex; flex-wrap: wrap; gap: 1rem; list-style: none; margin: 0; padding: .75rem 1rem; border-bottom: 1px solid var(--line); }
    header nav a[aria-current="page"] { font-weight: bold; text-decoration: none; }
    .lead, .note { color: var(--muted); }
    .flash { background: var(--note); color: var(--note-fg); padding: .5rem .75rem; border-radius: .25rem; }
    .error { color: var(--danger); font-weight: bold; }
    .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(16rem, 1fr)); gap: 1rem; }
    .item { background: var(--card); border: 1px solid var(--line); border-radius: .5rem; padding: .75rem; }
    .item h2 { font-size: 1.05rem; margin: .5rem 0 .25rem; overflow-wrap: anywhere; }
    .media img, .media video { display: block; width: 100%; max-height: 24rem; object-fit: contain; background: #000; border-radius: .25rem; }
    .shown img, .shown video { max-height: 60vh; }
    .why { font-weight: bold; margin: .25rem 0; }
    .asked { color: var(--danger); font-weight: bold; }
    dl { display: grid; grid-template-columns: auto 1fr; gap: 0 .75rem; margin: .5rem 0; font-size: .9rem; }
    dt { color: var(--muted); } dd { margin: 0; overflow-wrap: anywhere; }
    .actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: flex-start; }
    form { margin: .25rem 0; }
    button, .button { display: inline-block; font: inherit; padding: .45rem .9rem; border-radius: .3rem; border: 1px solid var(--line);
      background: var(--bg); color: var(--fg); cursor: pointer; text-decoration: none; min-height: 2.5rem; }
    button.primary, .button.primary { background: var(--accent); color: var(--accent-fg); border-color: var(--accent); }
    button.danger { background: var(--danger); color: var(--danger-fg); border-color: var(--danger); }
    details summary { cursor: pointer; padding: .45rem .9rem; border: 1px solid var(--line); border-radius: .3rem; min-height: 2.5rem; }
    .options { list-style: none; padding: .25rem 0; margin: 0; }
    .hidden-label { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
    input[type="text"], input[type="password"] { font: inherit; padding: .4rem; border: 1px solid var(--line); border-radius: .25rem; background: var(--bg); color: var(--fg); }
    table { border-collapse: collapse; width: 100%; } caption { text-align: left; color: var(--muted); }
    th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
    .account { border-top: 2px solid var(--line); margin-top: 1.5rem; }
    .cannot { padding: 2rem 1rem; text-align: center; }
    body.child { font-size: 1.15rem; }
    body.full main { max-width: 40rem; min-height: 100vh; display: flex; flex-direction: column; justify-content: center; }
    .pane .step { color: var(--muted); }
    .choices { display: flex; flex-wrap: wrap; gap: .75rem; margin: 1rem 0; }
    .guardian-only { margin-top: 2rem; padding-top: 1rem; border-top: 1px solid var(--line); }
    """
}
