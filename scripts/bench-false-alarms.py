#!/usr/bin/env python3
"""False alarms per corpus and mode, before and after the decision rules (issue 28).

Reads the JSON Lines of `quarantine scan --json` written by scripts/bench-false-alarms.sh:
  SCANS/before/CORPUS.MODE.jsonl   rules off ([policy.*.rules] lone_part = false, recheck = false)
  SCANS/after/CORPUS.MODE.jsonl    rules as configured (the defaults)
  SCANS/{before,after}.MODE.seconds  wall time of each pass
and prints a Markdown report: the table, every false alarm left (raw detections, open_nsfw,
picture size, transparency), every detection let through on the people corpora, what the rules
cost. Every corpus is everyday pictures: anything flagged in it is a false alarm. Exit 1 when a
people corpus changes or the issue's target is missed (with --strict).
"""
import argparse
import json
import sys
from pathlib import Path

PEOPLE_PREFIX = "people"


def load(path):
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                rows.append(json.loads(line))
    return rows


def transparency(path):
    """'alpha' when the picture has (partly) transparent pixels, 'opaque', or '?' without Pillow."""
    try:
        from PIL import Image
        with Image.open(path) as im:
            if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
                return "alpha" if im.convert("RGBA").getextrema()[3][0] < 255 else "opaque"
            return "opaque"
    except Exception:
        return "svg" if str(path).endswith(".svg") else "?"


def describe(r):
    dets = ", ".join(f"{d['label']} {d['score']:.2f} ({d['box'][2]}x{d['box'][3]})" for d in r["detections"]) or "none"
    nsfw = "-" if r.get("nsfw") is None else f"{r['nsfw']:.2f}"
    return f"{r['width']}x{r['height']} {transparency(r['path'])}; open_nsfw {nsfw}; detections: {dets}; reasons: {', '.join(r['reasons'])}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scans", type=Path)
    ap.add_argument("--strict", action="store_true", help="exit 1 when the issue's target is missed")
    a = ap.parse_args()
    modes = ["adult", "child"]
    corpora = sorted({p.name.split(".")[0] for p in (a.scans / "before").glob("*.jsonl")})
    out = []
    out.append("| corpus | pictures | adult before | adult after | child before | child after |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    totals = {(m, w): 0 for m in modes for w in ("before", "after")}
    everyday_total = 0
    left, people_changes, letthrough, rechecks = [], [], {m: 0 for m in modes}, {m: 0 for m in modes}
    decided = {m: {} for m in modes}  # (rule, outcome) -> count, everyday corpora
    for c in corpora:
        cells, pictures = [], 0
        for m in modes:
            for when in ("before", "after"):
                rows = [r for r in load(a.scans / when / f"{c}.{m}.jsonl") if r["kind"] == "image"]
                pictures = max(pictures, len(rows))
                flagged = [r for r in rows if r["sensitive"]]
                cells.append(f"{len(flagged)} ({100 * len(flagged) / max(1, len(rows)):.1f}%)")
                if not c.startswith(PEOPLE_PREFIX):
                    totals[(m, when)] += len(flagged)
                if when == "after":
                    for r in rows:
                        for ru in r.get("rules") or []:
                            rechecks[m] += ru["rule"] == "recheck"
                            letthrough[m] += ru["outcome"] == "let_through"
                            if not c.startswith(PEOPLE_PREFIX):
                                key = (ru["rule"], ru["outcome"])
                                decided[m][key] = decided[m].get(key, 0) + 1
                            if c.startswith(PEOPLE_PREFIX) and ru["outcome"] == "let_through":
                                people_changes.append((c, m, r["path"], ru))
                    if not c.startswith(PEOPLE_PREFIX):
                        left += [(c, m, r) for r in flagged]
        if not c.startswith(PEOPLE_PREFIX):
            everyday_total += pictures
        out.append(f"| {c} | {pictures} | " + " | ".join(cells) + " |")
    out.append(f"| **everyday, all** | {everyday_total} | " + " | ".join(
        f"**{totals[(m, w)]}** ({1000 * totals[(m, w)] / max(1, everyday_total):.2f}‰)" for m in modes for w in ("before", "after")) + " |")
    print("\n".join(out))
    print()
    for m in modes:
        b = a.scans / f"before.{m}.seconds"
        f = a.scans / f"after.{m}.seconds"
        if b.exists() and f.exists():
            tb, tf = float(b.read_text()), float(f.read_text())
            print(f"- {m}: wall time rules off {tb:.1f} s, rules on {tf:.1f} s ({100 * (tf - tb) / max(tb, 1e-9):+.1f}%); "
                  f"{rechecks[m]} re-checks (two more detector runs each), {letthrough[m]} detections let through")
        # Per picture: what the rules added where they ran (the same file, rules off and on).
        before_ms, after_ms = {}, {}
        for c in corpora:
            for r in load(a.scans / "before" / f"{c}.{m}.jsonl"):
                before_ms[r["path"]] = r.get("elapsed_ms", 0)
            for r in load(a.scans / "after" / f"{c}.{m}.jsonl"):
                if r.get("rules"):
                    kind = "recheck" if any(x["rule"] == "recheck" for x in r["rules"]) else "other"
                    after_ms.setdefault(kind, []).append((r["path"], r.get("elapsed_ms", 0)))
        for kind, items in sorted(after_ms.items()):
            pairs = [(before_ms[p], t) for p, t in items if p in before_ms]
            if pairs:
                pairs.sort(key=lambda x: x[1] - x[0])
                mid = pairs[len(pairs) // 2]
                what = "re-checked pictures" if kind == "recheck" else "pictures judged by the other rules (no re-check)"
                print(f"  - {m}, {what} ({len(pairs)}): median {mid[0]:.0f} ms rules off, {mid[1]:.0f} ms rules on")
        if decided[m]:
            print(f"  - {m}, what decided on the everyday corpora: " + ", ".join(
                f"{rule} {outcome.replace('_', ' ')} {n}" for (rule, outcome), n in sorted(decided[m].items())))
    print()
    print("People corpora (benign photos of people; nothing may change there):",
          "nothing let through" if not people_changes else f"{len(people_changes)} detections let through")
    for c, m, p, ru in people_changes:
        print(f"- {m} {c}/{Path(p).name}: {ru['label']} {ru['score']:.2f} ({ru['rule']}: {ru['detail']})")
    print()
    print(f"False alarms left after the rules ({len(left)}):")
    for c, m, r in left:
        print(f"- {m} {c}/{Path(r['path']).name}: {describe(r)}")
    missed = totals[("adult", "after")] > 0 or totals[("child", "after")] * 1000 > everyday_total or people_changes
    if a.strict and missed:
        sys.exit(1)


if __name__ == "__main__":
    main()
