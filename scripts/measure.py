#!/usr/bin/env python3
"""Run a command; print one JSON line: wall seconds, CPU seconds (user+sys) and peak RSS (MB)
of the command and its children. Its stdout is discarded, its stderr kept on ours."""
import json, resource, subprocess, sys, time

start = time.monotonic()
proc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
wall = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"status": proc.returncode, "wall_s": round(wall, 3),
                  "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
                  "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}))
