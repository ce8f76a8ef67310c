#!/usr/bin/python3
"""Fill the test fixture cache from the recipes kept in the tree (issue 27, the suite's own time).

    scripts/make-fixtures.py [--jobs N] [--recipes DIR] [--check]

Every video and picture the tests make with ffmpeg, heif-enc, avifenc, cjxl and the other
encoders is cached by content (Tests/TestSupport/FixtureCache.swift): the key is the program
(path, size, modification time), its arguments with the output reduced to its extension, and
the sha256 of every input file. On a fresh machine the cache is empty and the suite made about
90 fixtures while it ran (ffmpeg alone about 27-35 s of CPU). This script makes them before
the suite instead, from Tests/Fixtures/recipes (written by `make fixture-recipes`), N at a
time (2), with the same key, so the suite copies them. A fixture already cached is skipped; a
recipe whose program is missing or fails is reported and left for the test to make (and to
fail with its own message). --check only counts what is cached and what is not.

Always exits 0 (a fixture not made here is made by its test, as before): prints one summary
line, and one line per recipe it could not make.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FFMPEG_PREFIX = ["-hide_banner", "-loglevel", "error", "-y"]  # as FFmpegTool.encode runs it


def cache_dir():
    if os.environ.get("QUARANTINE_TEST_FIXTURE_CACHE") == "off":
        return None
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not base.startswith("/"):
        base = os.path.expanduser("~/.cache")
    path = os.path.join(base, "quarantine", "test-fixtures")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        print(f"fixtures: the cache {path} cannot be made ({error}); the tests make their fixtures as they run")
        return None
    return path


def extension(path):
    """NSString.pathExtension: what follows the last dot of the last component, if any."""
    name = os.path.basename(path.rstrip("/"))
    dot = name.rfind(".")
    return name[dot + 1:] if dot > 0 else ""


def key(program, arguments, output):
    """FixtureCache.key, byte for byte."""
    h = hashlib.sha256()

    def add(text):
        h.update(text.encode())
        h.update(b"\0")

    try:
        st = os.stat(program)
        add(f"{program} {st.st_size} {st.st_mtime_ns // 10**9}.{st.st_mtime_ns % 10**9}")
    except OSError:
        add(program)
    for argument in arguments:
        if argument == output:
            add("out." + extension(argument))
        elif argument.startswith("/") and os.path.isfile(argument):  # stat(2) follows links, as the Swift side's
            add("file:")
            with open(argument, "rb") as f:
                h.update(f.read())
        else:
            add(argument)
    return h.hexdigest()


def materialize(recipe, recipes, work):
    """The recipe's arguments with its placeholders made real paths under `work`."""
    output = os.path.join(work, "out" + ("." + recipe["output_extension"] if recipe["output_extension"] else ""))
    arguments = []
    for argument in recipe["arguments"]:
        if argument == "{output}":
            arguments.append(output)
        elif argument.startswith("{repo:") and argument.endswith("}"):
            arguments.append(os.path.join(REPO, argument[6:-1]))
        elif argument.startswith("{input:") and argument.endswith("}"):
            name = argument[7:-1]
            path = os.path.join(work, "in-" + str(len(arguments)) + "-" + name)
            shutil.copyfile(os.path.join(recipes, "inputs", name), path)
            arguments.append(path)
        else:
            arguments.append(argument)
    return arguments, output


def cached_path(cache, recipe, arguments, output):
    """Where the cache keeps the output of `recipe` made with these (materialized) arguments."""
    ext = recipe["output_extension"]
    return os.path.join(cache, key(recipe["program"], arguments, output) + ("." + ext if ext else ""))


def make(path, recipes, cache):
    """(status, message) for the recipe at `path`: cached, made, or failed (never raises: a
    fixture not made here is made by its test, which says why if it cannot)."""
    try:
        return make_one(path, recipes, cache)
    except Exception as error:  # noqa: BLE001 - reported, and left to the test
        return "failed", f"{os.path.basename(path)}: {type(error).__name__}: {error}"


def make_one(path, recipes, cache):
    with open(path) as f:
        recipe = json.load(f)
    program = recipe["program"]
    if not os.access(program, os.X_OK):
        return "failed", f"{os.path.basename(path)}: {program} is missing (make setup installs it)"
    with tempfile.TemporaryDirectory(prefix="quarantine-fixture-") as work:
        try:
            arguments, output = materialize(recipe, recipes, work)
        except OSError as error:
            return "failed", f"{os.path.basename(path)}: an input is missing: {error}"
        cached = cached_path(cache, recipe, arguments, output)
        if os.path.exists(cached):
            return "cached", ""
        run = subprocess.run([program] + (FFMPEG_PREFIX if program == "/usr/bin/ffmpeg" else []) + arguments,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
        if run.returncode != 0 or not os.path.exists(output):
            return "failed", f"{os.path.basename(path)}: {program} exited {run.returncode}: {run.stderr.decode(errors='replace')[-300:]}"
        partial = f"{cached}.{os.getpid()}.{os.path.basename(work)}.part"
        if os.path.isdir(output):
            shutil.copytree(output, partial)
        else:
            shutil.copyfile(output, partial)
        try:
            os.rename(partial, cached)  # a folder already there: keep the first
        except OSError:
            shutil.rmtree(partial, ignore_errors=True)
        return "made", ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--recipes", default=os.path.join(REPO, "Tests", "Fixtures", "recipes"))
    parser.add_argument("--check", action="store_true", help="count what is cached, make nothing")
    options = parser.parse_args()
    cache = cache_dir()
    if cache is None:
        if os.environ.get("QUARANTINE_TEST_FIXTURE_CACHE") == "off":
            print("fixtures: the cache is off (QUARANTINE_TEST_FIXTURE_CACHE=off); nothing made")
        return 0
    try:
        paths = sorted(os.path.join(options.recipes, n) for n in os.listdir(options.recipes) if n.endswith(".json"))
    except OSError as error:
        print(f"fixtures: no recipes in {options.recipes} ({error}); the tests make their fixtures as they run")
        return 0
    started = time.monotonic()
    counts = {"cached": 0, "made": 0, "failed": 0}
    before = os.times()
    if options.check:
        for path in paths:
            with open(path) as f:
                recipe = json.load(f)
            with tempfile.TemporaryDirectory(prefix="quarantine-fixture-") as work:
                cached = os.path.exists(cached_path(cache, recipe, *materialize(recipe, options.recipes, work)))
            counts["cached" if cached else "failed"] += 1
        print(f"fixtures: {counts['cached']} of {len(paths)} cached, {counts['failed']} not")
        return 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        for status, message in pool.map(lambda p: make(p, options.recipes, cache), paths):
            counts[status] += 1
            if message:
                print("fixtures: " + message, file=sys.stderr)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    print(f"fixtures: {counts['made']} made ({cpu:.1f} s of CPU), {counts['cached']} already cached, "
          f"{counts['failed']} left to the tests, of {len(paths)} recipes, in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
