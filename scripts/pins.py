#!/usr/bin/env python3
"""Prints the pinned artifacts of Sources/QuarantineBase/ModelCatalog.swift, the one place
they are written, one per line for scripts/setup.sh:

    KIND FILE SHA256 WHEEL MEMBER PLATFORM      (KIND: runtime or model; PLATFORM: - for none)
"""
import pathlib, re, sys

source = pathlib.Path(__file__).resolve().parent.parent / "Sources/QuarantineBase/ModelCatalog.swift"
text = source.read_text()
found = 0
for block in re.findall(r"static let \w+ = Artifact\((.*?)\)\n", text, re.S):
    fields = dict(re.findall(r'(\w+): ("[^"]*"|nil|true|false)', block))
    value = lambda key: fields[key].strip('"') if fields.get(key, "nil") != "nil" else "-"
    kind = "runtime" if fields.get("isRuntime") == "true" else "model"
    print(kind, value("fileName"), value("sha256"), value("wheel"), value("member"), value("platform"))
    found += 1
if found == 0:
    sys.exit(f"pins.py: no Artifact definitions found in {source}")
