#!/usr/bin/python3
"""A client of the agent's analysis service on the session bus (io.github.quarantine.Analysis1),
with python3-gi (Gio) as an application would use it. Run by AnalysisBusTests; prints one JSON
object per result on stdout.

  analysis_bus_client.py policy
  analysis_bus_client.py image FILE [--unlinked | --memfd]     the descriptor of a file nobody can name
  analysis_bus_client.py video FILE [--leave-after-progress]   the job's signals; or disconnect mid-video
  analysis_bus_client.py stream CLEAN CARD STEPS [RAWCLEAN RAWCARD WIDTH HEIGHT FORMAT]
                                                               a stream driven step by step (see stream())
  analysis_bus_client.py rawpipe RAWCLEAN RAWCARD WIDTH HEIGHT FORMAT
                                                               a pipe of raw frames (AnalyzeRawFrames): changes, RawFramesEnded
  analysis_bus_client.py flood FRAME COUNT [--leave]          COUNT frames at once: the drop count; or leave at once
  analysis_bus_client.py pace CLEAN CARD FPS SECONDS FROM UNTIL [WIDTH HEIGHT FORMAT]
                                                               a paced stream with the card FROM..UNTIL s: figures
  analysis_bus_client.py pace-pipe RAWCLEAN RAWCARD FPS SECONDS FROM UNTIL WIDTH HEIGHT FORMAT
                                                               the same through one pipe (AnalyzeRawFrames)
  analysis_bus_client.py watch-policy SECONDS                  PropertiesChanged of AnalysisPolicy
  analysis_bus_client.py burst FILE COUNT                      COUNT calls at once: the caller's bound
  analysis_bus_client.py hostile FILE                          pipes, directories, O_PATH, paths, another caller's object
  analysis_bus_client.py introspect XMLFILE VIDEO              Introspect of each object against the shipped XML
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from gi.repository import Gio, GLib

NAME = "io.github.quarantine.Analysis1"
PATH = "/io/github/quarantine/Analysis1"
IFACE = "io.github.quarantine.Analysis1"

bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)


def out(obj):
    print(json.dumps(obj), flush=True)


def call(path, iface, method, args, reply, fds=()):
    fdlist = Gio.UnixFDList.new()
    for fd in fds:
        fdlist.append(fd)
    result, _ = bus.call_with_unix_fd_list_sync(
        NAME, path, iface, method, args, GLib.VariantType(reply) if reply else None,
        Gio.DBusCallFlags.NONE, 120000, fdlist, None)
    return result.unpack() if result is not None else None


def get(path, iface, prop):
    return bus.call_sync(NAME, path, "org.freedesktop.DBus.Properties", "Get", GLib.Variant("(ss)", (iface, prop)),
                         GLib.VariantType("(v)"), Gio.DBusCallFlags.NONE, 10000, None).unpack()[0]


def descriptor(path, how):
    """An open descriptor of PATH's bytes; with --unlinked or --memfd, of a copy no name leads to."""
    if how == "--unlinked":
        fd, name = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
        with open(path, "rb") as src:
            os.write(fd, src.read())
        os.unlink(name)
        return fd
    if how == "--memfd":
        fd = os.memfd_create("picture", os.MFD_CLOEXEC)
        with open(path, "rb") as src:
            os.write(fd, src.read())
        return fd
    return os.open(path, os.O_RDONLY)


def image(path, how=None):
    fd = descriptor(path, how)
    try:
        sensitive, reasons, boxes, elapsed = call(PATH, IFACE, "AnalyzeImage", GLib.Variant("(h)", (0,)), "(basa(sddddd)d)", [fd])
    except GLib.Error as e:
        return out({"error": Gio.DBusError.get_remote_error(e), "message": e.message})
    finally:
        os.close(fd)
    out({"sensitive": sensitive, "reasons": reasons, "boxes": [list(b) for b in boxes], "elapsed_ms": elapsed,
         "linked": os.path.exists(path)})


def plain(value):
    """A GLib value unpacked, as JSON holds it (tuples as lists)."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def watch_properties():
    """PropertiesChanged of every object of the service, as (path, interface, changed), in order."""
    seen = []

    def on_changed(_c, _s, path, _i, _m, params):
        iface, changed, invalidated = params.unpack()
        seen.append({"path": path, "interface": iface, "changed": plain(changed), "invalidated": list(invalidated)})

    bus.signal_subscribe(NAME, "org.freedesktop.DBus.Properties", "PropertiesChanged", None, None, Gio.DBusSignalFlags.NONE, on_changed)
    return seen


def video(path, leave=False):
    loop = GLib.MainLoop()
    events = []
    job = {}
    properties = watch_properties()

    def on_signal(_conn, _sender, object_path, _iface, member, params):
        if object_path != job.get("path"):
            events.append(("early", object_path, member, params.unpack()))
            return
        record(member, params.unpack())

    def record(member, args):
        if member == "Progress":
            events.append({"signal": "Progress", "fraction": args[0], "covered": [list(r) for r in args[1]], "media_time": args[2]})
            if leave:
                out({"left_after": events[-1], "path": job["path"]})
                os._exit(0)  # the connection closes with the process: a caller that goes away
        elif member == "Finished":
            events.append({"signal": "Finished", "sensitive": args[0], "flagged_time": args[1],
                           "ranges": [list(r) for r in args[2]], "reasons": args[3]})
            loop.quit()
        elif member == "Failed":
            events.append({"signal": "Failed", "code": args[0], "message": args[1]})
            loop.quit()

    # Subscribed before the call: no signal of the job can come before it.
    bus.signal_subscribe(NAME, IFACE + ".VideoJob", None, None, None, Gio.DBusSignalFlags.NONE, on_signal)
    fd = descriptor(path, None)
    try:
        (job["path"],) = call(PATH, IFACE, "AnalyzeVideo", GLib.Variant("(h)", (0,)), "(o)", [fd])
    except GLib.Error as e:
        return out({"error": Gio.DBusError.get_remote_error(e), "message": e.message})
    finally:
        os.close(fd)
    for early in [e for e in events if isinstance(e, tuple)]:
        events.remove(early)
        if early[1] == job["path"]:
            record(early[2], early[3])
    if not any(e.get("signal") in ("Finished", "Failed") for e in events):
        GLib.timeout_add_seconds(120, loop.quit)
        loop.run()
    # PropertiesChanged and the signals come in one order on the connection: all are in by now.
    context = GLib.MainContext.default()
    while context.iteration(False):
        pass
    out({"path": job["path"], "events": events, "state": get(job["path"], IFACE + ".VideoJob", "State"),
         "result": list(get(job["path"], IFACE + ".VideoJob", "Result")),
         "properties": [p for p in properties if p["path"] == job["path"]]})


def begin_stream():
    changes = []
    loop = GLib.MainLoop()

    def on_change(_c, _s, path, _i, _m, params):
        changes.append({"path": path, "change": list(params.unpack())})

    bus.signal_subscribe(NAME, IFACE + ".Stream", "AnalysisChanged", None, None, Gio.DBusSignalFlags.NONE, on_change)
    (stream,) = call(PATH, IFACE, "BeginStream", GLib.Variant("(ss)", ("participant-1", "incoming")), "(o)")
    return stream, changes, loop


def frame(stream, path):
    fd = descriptor(path, "--memfd")
    try:
        call(stream, IFACE + ".Stream", "AnalyzeFrame", GLib.Variant("(h)", (0,)), "()", [fd])
    finally:
        os.close(fd)


def raw_frame(stream, path, width, height, pixel_format):
    fd = descriptor(path, "--memfd")
    try:
        call(stream, IFACE + ".Stream", "AnalyzeRawFrame", GLib.Variant("(huus)", (0, width, height, pixel_format)), "()", [fd])
    finally:
        os.close(fd)


def counts(stream):
    return {p: get(stream, IFACE + ".Stream", "Frames" + p) for p in ("Seen", "Judged", "Dropped", "Failed")}


def advice(stream):
    return [get(stream, IFACE + ".Stream", p) for p in ("ShouldIndicateSensitivity", "ShouldInterruptVideo", "ShouldMuteAudio")]


def settle(stream, seconds=60):
    """Waits until every frame sent is judged or dropped (the stream is idle)."""
    deadline = GLib.get_monotonic_time() + seconds * 1_000_000
    while GLib.get_monotonic_time() < deadline:
        c = counts(stream)
        if c["Judged"] + c["Dropped"] >= c["Seen"]:
            return c
        GLib.usleep(10_000)
    raise SystemExit("the stream did not judge its frames in %d s: %s" % (seconds, counts(stream)))


def stream(clean, card, steps, raw=None):
    """STEPS, comma-separated, one at a time (each frame is judged before the next is sent):
    clean, card, junk (not a picture), rawclean, rawcard (AnalyzeRawFrame), continue
    (ContinueStream), clear (clean frames until the indication is lifted). After each step the
    stream's Should* properties are recorded; at the end the AnalysisChanged signals received."""
    properties = watch_properties()
    path, changes, loop = begin_stream()
    junk = os.path.join(tempfile.mkdtemp(), "junk.txt")
    with open(junk, "w") as f:
        f.write("not a picture\n")
    context = GLib.MainContext.default()
    states = []
    cleared_after = None
    for step in steps.split(","):
        if step in ("clean", "card", "junk"):
            frame(path, {"clean": clean, "card": card, "junk": junk}[step])
        elif step in ("rawclean", "rawcard"):
            raw_frame(path, raw[0] if step == "rawclean" else raw[1], int(raw[2]), int(raw[3]), raw[4])
        elif step == "continue":
            call(path, IFACE + ".Stream", "ContinueStream", None, "()")
        elif step == "clear":
            for n in range(1, 41):
                frame(path, clean)
                settle(path)
                if not advice(path)[0]:
                    cleared_after = n
                    break
        else:
            raise SystemExit("unknown step " + step)
        settle(path)
        while context.iteration(False):
            pass
        states.append(advice(path))
    # Every change of the properties also came as a signal, to this caller.
    expected = sum(1 for a, b in zip([[False] * 3] + states, states) if a != b)
    deadline = GLib.get_monotonic_time() + 10_000_000
    while len(changes) < expected and GLib.get_monotonic_time() < deadline:
        context.iteration(False)
        GLib.usleep(10_000)
    final = counts(path)
    policy = get(path, IFACE + ".Stream", "AnalysisPolicy")
    call(path, IFACE + ".Stream", "End", None, "()")
    out({"stream": path, "policy": policy, "states": states, "changes": [c["change"] for c in changes],
         "paths": sorted(set(c["path"] for c in changes)), "cleared_after": cleared_after,
         "property_changes": [[p["changed"].get(n) for n in ("ShouldIndicateSensitivity", "ShouldInterruptVideo", "ShouldMuteAudio")]
                              for p in properties if p["path"] == path and p["interface"] == IFACE + ".Stream"],
         "seen": final["Seen"], "judged": final["Judged"], "dropped": final["Dropped"], "failed": final["Failed"]})


def wait_until(predicate, seconds=60):
    context = GLib.MainContext.default()
    deadline = GLib.get_monotonic_time() + seconds * 1_000_000
    while not predicate():
        if GLib.get_monotonic_time() > deadline:
            raise SystemExit("timed out")
        if not context.iteration(False):
            GLib.usleep(5_000)


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def rawpipe(raw_clean, raw_card, width, height, pixel_format):
    """Raw frames through one pipe: 2 clean frames (judged), then the card until the stream
    indicates, then half a frame and the writer closes. Also: a second pipe while one is read,
    and a memfd, are refused."""
    ended = []
    bus.signal_subscribe(NAME, IFACE + ".Stream", "RawFramesEnded", None, None, Gio.DBusSignalFlags.NONE,
                         lambda _c, _s, p, _i, _m, params: ended.append({"path": p, "args": list(params.unpack())}))
    path, changes, _ = begin_stream()
    args = GLib.Variant("(huus)", (0, width, height, pixel_format))
    r, w = os.pipe()
    call(path, IFACE + ".Stream", "AnalyzeRawFrames", args, "()", [r])
    os.close(r)
    refused = {}
    r2, w2 = os.pipe()
    mem = os.memfd_create("frames", os.MFD_CLOEXEC)
    for name, fd in (("second_pipe", r2), ("memfd", mem)):
        try:
            call(path, IFACE + ".Stream", "AnalyzeRawFrames", args, "()", [fd])
            refused[name] = "taken"
        except GLib.Error as e:
            refused[name] = Gio.DBusError.get_remote_error(e)
    for fd in (r2, w2, mem):
        os.close(fd)
    clean = open(raw_clean, "rb").read()
    card = open(raw_card, "rb").read()
    for _ in range(2):
        write_all(w, clean)
    wait_until(lambda: counts(path)["Seen"] == 2 and counts(path)["Judged"] + counts(path)["Dropped"] == 2)
    before = list(changes)
    sent = 2
    while not changes and sent < 40:
        write_all(w, card)
        sent += 1
        wait_until(lambda: counts(path)["Judged"] + counts(path)["Dropped"] >= counts(path)["Seen"] or changes, 60)
    write_all(w, card[: len(card) // 2])
    os.close(w)
    wait_until(lambda: ended)
    final = counts(path)
    call(path, IFACE + ".Stream", "End", None, "()")
    # Another stream: End while the writer keeps its pipe open and silent; a write end, a frame too large.
    other, _, _ = begin_stream()
    r, w = os.pipe()
    for name, fd, dims in (("write_end", w, (width, height)), ("huge", r, (100000, 100000))):
        try:
            call(other, IFACE + ".Stream", "AnalyzeRawFrames", GLib.Variant("(huus)", (0, dims[0], dims[1], pixel_format)), "()", [fd])
            refused[name] = "taken"
        except GLib.Error as e:
            refused[name] = Gio.DBusError.get_remote_error(e)
    call(other, IFACE + ".Stream", "AnalyzeRawFrames", args, "()", [r])
    write_all(w, clean[: len(clean) // 3])
    started = GLib.get_monotonic_time()
    call(other, IFACE + ".Stream", "End", None, "()")
    end_seconds = (GLib.get_monotonic_time() - started) / 1e6
    wait_until(lambda: len(ended) > 1, 10)
    os.close(r)
    os.close(w)
    out({"before_card": [c["change"] for c in before], "changes": [c["change"] for c in changes], "sent": sent,
         "end_with_open_pipe_s": end_seconds, "open_pipe_ended": ended[1]["args"] if len(ended) > 1 else None,
         "ended": ended[0]["args"], "ended_path_ok": ended[0]["path"] == path, "refused": refused,
         "seen": final["Seen"], "judged": final["Judged"], "dropped": final["Dropped"]})


def flood(path, count, leave=False):
    stream, _, _ = begin_stream()
    started = GLib.get_monotonic_time()
    for _ in range(count):
        frame(stream, path)
    if leave:
        out({"left": True, "stream": stream})
        os._exit(0)  # the connection closes with the process: a caller that goes away
    # Let the stream judge what was kept.
    deadline = GLib.get_monotonic_time() + 60_000_000
    while GLib.get_monotonic_time() < deadline:
        judged = get(stream, IFACE + ".Stream", "FramesJudged")
        dropped = get(stream, IFACE + ".Stream", "FramesDropped")
        if judged + dropped >= count:
            break
        GLib.usleep(20_000)
    seconds = (GLib.get_monotonic_time() - started) / 1e6
    call(stream, IFACE + ".Stream", "End", None, "()")
    out({"sent": count, "judged": judged, "dropped": dropped, "seconds": seconds, "judged_per_second": judged / seconds})


def pace(clean, card, fps, seconds, card_from, card_until, raw=None):
    """A live stream: a frame every 1/FPS s for SECONDS, the card from CARD_FROM to CARD_UNTIL s
    (encoded pictures; with RAW = (WIDTH, HEIGHT, FORMAT), CLEAN and CARD are raw frames). The
    counts, the judging rate, and when the advice came and went on the sender's clock."""
    path, changes, _ = begin_stream()
    context = GLib.MainContext.default()
    arrivals = []
    fds = {}
    for name, source in (("clean", clean), ("card", card)):
        fds[name] = descriptor(source, "--memfd")
    started = GLib.get_monotonic_time()
    n = 0
    while True:
        t = n / fps
        now = (GLib.get_monotonic_time() - started) / 1e6
        if t > seconds:
            break
        if t > now:
            GLib.usleep(int((t - now) * 1e6))
        which = "card" if card_from <= t < card_until else "clean"
        if raw:
            call(path, IFACE + ".Stream", "AnalyzeRawFrame", GLib.Variant("(huus)", (0, int(raw[0]), int(raw[1]), raw[2])), "()", [fds[which]])
        else:
            call(path, IFACE + ".Stream", "AnalyzeFrame", GLib.Variant("(h)", (0,)), "()", [fds[which]])
        n += 1
        while context.iteration(False):
            pass
        while len(arrivals) < len(changes):
            arrivals.append({"at": round((GLib.get_monotonic_time() - started) / 1e6, 3), "change": changes[len(arrivals)]["change"]})
    final = settle(path)
    elapsed = (GLib.get_monotonic_time() - started) / 1e6
    call(path, IFACE + ".Stream", "End", None, "()")
    while context.iteration(False):
        pass
    while len(arrivals) < len(changes):
        arrivals.append({"at": round((GLib.get_monotonic_time() - started) / 1e6, 3), "change": changes[len(arrivals)]["change"]})
    out({"sent": n, "seen": final["Seen"], "judged": final["Judged"], "dropped": final["Dropped"], "failed": final["Failed"],
         "seconds": round(elapsed, 2), "judged_per_second": round(final["Judged"] / elapsed, 2), "changes": arrivals})


def pace_pipe(clean, card, fps, seconds, card_from, card_until, width, height, pixel_format):
    """As pace() with raw frames, written at their pace into one pipe (AnalyzeRawFrames)."""
    ended = []
    bus.signal_subscribe(NAME, IFACE + ".Stream", "RawFramesEnded", None, None, Gio.DBusSignalFlags.NONE,
                         lambda _c, _s, p, _i, _m, params: ended.append(list(params.unpack())))
    path, changes, _ = begin_stream()
    context = GLib.MainContext.default()
    r, w = os.pipe()
    call(path, IFACE + ".Stream", "AnalyzeRawFrames", GLib.Variant("(huus)", (0, width, height, pixel_format)), "()", [r])
    os.close(r)
    frames = {"clean": open(clean, "rb").read(), "card": open(card, "rb").read()}
    arrivals = []
    started = GLib.get_monotonic_time()
    n = 0
    while True:
        t = n / fps
        now = (GLib.get_monotonic_time() - started) / 1e6
        if t > seconds:
            break
        if t > now:
            GLib.usleep(int((t - now) * 1e6))
        write_all(w, frames["card" if card_from <= t < card_until else "clean"])
        n += 1
        while context.iteration(False):
            pass
        while len(arrivals) < len(changes):
            arrivals.append({"at": round((GLib.get_monotonic_time() - started) / 1e6, 3), "change": changes[len(arrivals)]["change"]})
    late = round((GLib.get_monotonic_time() - started) / 1e6 - seconds, 3)
    os.close(w)
    wait_until(lambda: ended)
    final = settle(path)
    elapsed = (GLib.get_monotonic_time() - started) / 1e6
    call(path, IFACE + ".Stream", "End", None, "()")
    while context.iteration(False):
        pass
    while len(arrivals) < len(changes):
        arrivals.append({"at": round((GLib.get_monotonic_time() - started) / 1e6, 3), "change": changes[len(arrivals)]["change"]})
    out({"sent": n, "read": ended[0][0], "ended": ended[0][1], "writer_late_s": late, "seen": final["Seen"], "judged": final["Judged"],
         "dropped": final["Dropped"], "failed": final["Failed"], "seconds": round(elapsed, 2),
         "judged_per_second": round(final["Judged"] / elapsed, 2), "changes": arrivals})


def watch_policy(seconds):
    loop = GLib.MainLoop()
    seen = []

    def on_change(_c, _s, _p, _i, _m, params):
        iface, changed, _ = params.unpack()
        if iface == IFACE and "AnalysisPolicy" in changed:
            seen.append(changed["AnalysisPolicy"])
            out({"changed": seen[-1]})
            loop.quit()

    bus.signal_subscribe(NAME, "org.freedesktop.DBus.Properties", "PropertiesChanged", PATH, None, Gio.DBusSignalFlags.NONE, on_change)
    out({"ready": get(PATH, IFACE, "AnalysisPolicy")})
    GLib.timeout_add_seconds(seconds, loop.quit)
    loop.run()
    if not seen:
        out({"changed": None})


def burst(path, count):
    """COUNT AnalyzeImage calls at once on one connection: the caller's bound answers the rest."""
    loop = GLib.MainLoop()
    answers = []

    def done(conn, result):
        try:
            conn.call_with_unix_fd_list_finish(result)
            answers.append("ok")
        except GLib.Error as e:
            answers.append(Gio.DBusError.get_remote_error(e))
        if len(answers) == count:
            loop.quit()

    for _ in range(count):
        fdlist = Gio.UnixFDList.new()
        fd = os.open(path, os.O_RDONLY)
        fdlist.append(fd)
        os.close(fd)
        bus.call_with_unix_fd_list(NAME, PATH, IFACE, "AnalyzeImage", GLib.Variant("(h)", (0,)),
                                   GLib.VariantType("(basa(sddddd)d)"), Gio.DBusCallFlags.NONE, 120000, fdlist, None, done)
    GLib.timeout_add_seconds(120, loop.quit)
    loop.run()
    out({"answers": answers})


def hostile(path):
    """Descriptors that are not a picture file, and another caller's object."""
    answers = {}
    r, w = os.pipe()
    os.write(w, open(path, "rb").read()[:4096])
    os.close(w)
    directory = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | os.O_DIRECTORY)
    only_path = os.open(path, os.O_PATH)
    write_only = os.open(os.path.join(os.path.dirname(os.path.abspath(path)), "write-only"), os.O_WRONLY | os.O_CREAT, 0o600)
    for name, fd in [("pipe", r), ("directory", directory), ("o_path", only_path), ("write_only", write_only)]:
        try:
            call(PATH, IFACE, "AnalyzeImage", GLib.Variant("(h)", (0,)), "(basa(sddddd)d)", [fd])
            answers[name] = "answered"
        except GLib.Error as e:
            answers[name] = Gio.DBusError.get_remote_error(e) + ": " + e.message
        os.close(fd)
    for name, fd in [("video_pipe", os.pipe()[0])]:
        try:
            call(PATH, IFACE, "AnalyzeVideo", GLib.Variant("(h)", (0,)), "(o)", [fd])
            answers[name] = "answered"
        except GLib.Error as e:
            answers[name] = Gio.DBusError.get_remote_error(e)
    # A path where a descriptor is expected, a wrong direction.
    for name, method, args in [("path_string", "AnalyzeImage", GLib.Variant("(s)", (path,))),
                               ("bad_direction", "BeginStream", GLib.Variant("(ss)", ("p", "sideways")))]:
        try:
            bus.call_sync(NAME, PATH, IFACE, method, args, None, Gio.DBusCallFlags.NONE, 10000, None)
            answers[name] = "answered"
        except GLib.Error as e:
            answers[name] = Gio.DBusError.get_remote_error(e)
    # Another connection (gdbus, a process of its own) ends this caller's stream: not its object.
    (stream,) = call(PATH, IFACE, "BeginStream", GLib.Variant("(ss)", ("p", "incoming")), "(o)")
    other = subprocess.run(["gdbus", "call", "--session", "--dest", NAME, "--object-path", stream, "--method", IFACE + ".Stream.End"],
                           capture_output=True, text=True)
    answers["foreign_end"] = other.stderr.strip()
    answers["still_mine"] = get(stream, IFACE + ".Stream", "Direction")
    # Frames the stream refuses at the call: a pipe (never read: it could make the agent wait),
    # raw frames of an unknown layout, of no pixels, over the size limit, or larger than the file.
    small = os.memfd_create("frame", os.MFD_CLOEXEC)
    os.write(small, b"\x80" * 100)
    pipe_r, pipe_w = os.pipe()
    os.write(pipe_w, open(path, "rb").read()[:4096])
    os.close(pipe_w)
    for name, method, args, fd in [
            ("frame_pipe", "AnalyzeFrame", GLib.Variant("(h)", (0,)), pipe_r),
            ("raw_format", "AnalyzeRawFrame", GLib.Variant("(huus)", (0, 10, 10, "yuv444p16")), small),
            ("raw_empty", "AnalyzeRawFrame", GLib.Variant("(huus)", (0, 0, 10, "gray")), small),
            ("raw_huge", "AnalyzeRawFrame", GLib.Variant("(huus)", (0, 4294967295, 4294967295, "rgba")), small),
            ("raw_short", "AnalyzeRawFrame", GLib.Variant("(huus)", (0, 64, 64, "rgb24")), small),
            ("raw_pipe", "AnalyzeRawFrame", GLib.Variant("(huus)", (0, 10, 10, "gray")), pipe_r)]:
        try:
            call(stream, IFACE + ".Stream", method, args, "()", [fd])
            answers[name] = "answered"
        except GLib.Error as e:
            answers[name] = Gio.DBusError.get_remote_error(e) + ": " + e.message
    # 10x10 gray is 100 bytes: taken.
    call(stream, IFACE + ".Stream", "AnalyzeRawFrame", GLib.Variant("(huus)", (0, 10, 10, "gray")), "()", [small])
    answers["raw_fits"] = counts(stream)["Seen"]
    os.close(small)
    os.close(pipe_r)
    call(stream, IFACE + ".Stream", "End", None, "()")
    out(answers)


def canonical(element):
    return (element.tag, tuple(sorted(element.attrib.items())), tuple(canonical(c) for c in element))


def introspect(xml_file, video_file):
    shipped = {i.get("name"): canonical(i) for i in ET.parse(xml_file).getroot().findall("interface")}
    answered = {}
    for path in [PATH]:
        (xml,) = bus.call_sync(NAME, path, "org.freedesktop.DBus.Introspectable", "Introspect", None,
                               GLib.VariantType("(s)"), Gio.DBusCallFlags.NONE, 10000, None).unpack()
        answered.update({i.get("name"): canonical(i) for i in ET.fromstring(xml).findall("interface")})
    # Objects of the other two interfaces are made for the check.
    (stream,) = call(PATH, IFACE, "BeginStream", GLib.Variant("(ss)", ("p", "outgoing")), "(o)")
    (xml,) = bus.call_sync(NAME, stream, "org.freedesktop.DBus.Introspectable", "Introspect", None,
                           GLib.VariantType("(s)"), Gio.DBusCallFlags.NONE, 10000, None).unpack()
    answered.update({i.get("name"): canonical(i) for i in ET.fromstring(xml).findall("interface")})
    call(stream, IFACE + ".Stream", "End", None, "()")
    fd = os.open(video_file, os.O_RDONLY)
    (job,) = call(PATH, IFACE, "AnalyzeVideo", GLib.Variant("(h)", (0,)), "(o)", [fd])
    os.close(fd)
    (xml,) = bus.call_sync(NAME, job, "org.freedesktop.DBus.Introspectable", "Introspect", None,
                           GLib.VariantType("(s)"), Gio.DBusCallFlags.NONE, 10000, None).unpack()
    answered.update({i.get("name"): canonical(i) for i in ET.fromstring(xml).findall("interface")})
    call(job, IFACE + ".VideoJob", "Cancel", None, "()")
    out({"shipped": sorted(shipped), "same": {name: answered.get(name) == shipped[name] for name in shipped}})


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "policy":
        out({"policy": get(PATH, IFACE, "AnalysisPolicy")})
    elif command == "image":
        image(args[0], args[1] if len(args) > 1 else None)
    elif command == "video":
        video(args[0], leave="--leave-after-progress" in args)
    elif command == "stream":
        stream(args[0], args[1], args[2], args[3:] if len(args) > 3 else None)
    elif command == "rawpipe":
        rawpipe(args[0], args[1], int(args[2]), int(args[3]), args[4])
    elif command == "flood":
        flood(args[0], int(args[1]), leave="--leave" in args)
    elif command == "pace":
        pace(args[0], args[1], float(args[2]), float(args[3]), float(args[4]), float(args[5]), args[6:9] if len(args) > 6 else None)
    elif command == "pace-pipe":
        pace_pipe(args[0], args[1], float(args[2]), float(args[3]), float(args[4]), float(args[5]), int(args[6]), int(args[7]), args[8])
    elif command == "watch-policy":
        watch_policy(int(args[0]))
    elif command == "burst":
        burst(args[0], int(args[1]))
    elif command == "hostile":
        hostile(args[0])
    elif command == "introspect":
        introspect(args[0], args[1])
    else:
        sys.exit("unknown command " + command)
