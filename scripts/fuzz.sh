#!/usr/bin/env bash
# make fuzz: builds the libFuzzer harnesses (Sources/quarantine-fuzz) with -sanitize=fuzzer,address
# in .build/fuzz, replays the committed crash regressions, then runs every harness for FUZZ_SECONDS
# (default 60) from its committed seeds (Tests/Fuzz/corpus, made by scripts/fuzz/seeds.py) plus
# the corpus kept from earlier runs (.build/fuzz/corpus). Prints executions, coverage and corpus
# size per harness and exits 1 if any harness found a crash, leak, timeout or out-of-memory.
#
#   FUZZ_SECONDS=600 make fuzz          ten minutes each
#   HARNESSES="video jpeg" make fuzz    some of them
#   FUZZ_JOBS=2 make fuzz               two at a time (this machine has 2 cores)
set -uo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
FUZZ_JOBS=${FUZZ_JOBS:-1}
ALL="sniff jpeg-header jpeg ffmpeg-image picture video gif-frames config dbus guardian-request archive pdf"
HARNESSES=${HARNESSES:-$ALL}
BIN=.build/fuzz/debug/quarantine-fuzz
STAMP=$(date +%Y%m%d-%H%M%S)
LOGS=.build/fuzz/logs/$STAMP

echo "building the harnesses (.build/fuzz, -sanitize=fuzzer,address)"
# A failed build must stop here: the harnesses left by an earlier build would test old code.
if ! "$SWIFT" build --product quarantine-fuzz --scratch-path .build/fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xcc -fsanitize=fuzzer-no-link,address > .build/fuzz-build.log 2>&1; then
    grep -v "Cannot export local symbol" .build/fuzz-build.log | grep -E "error|warning: " | head -20 >&2
    echo "make fuzz: the build failed (.build/fuzz-build.log)" >&2
    exit 1
fi
tail -1 .build/fuzz-build.log
mkdir -p "$LOGS"

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:handle_abort=1
export LSAN_OPTIONS=suppressions=$PWD/scripts/fuzz/lsan.supp:print_suppressions=0

asan_options() { echo "$ASAN_OPTIONS"; }

status=0
# Every input that once crashed, leaked or hung, run once (Tests/Fuzz/regressions/HARNESS/).
for dir in Tests/Fuzz/regressions/*/; do
    [ -d "$dir" ] || continue
    h=$(basename "$dir")
    files=("$dir"*)
    [ -e "${files[0]}" ] || continue
    if ASAN_OPTIONS=$(asan_options "$h") "$BIN" "$h" -timeout=10 "${files[@]}" > "$LOGS/regressions-$h.log" 2>&1; then
        echo "regressions  $h: ${#files[@]} inputs pass"
    else
        echo "regressions  $h: FAILED (see $LOGS/regressions-$h.log)"; status=1
    fi
done

max_len() {
    case $1 in
        sniff|dbus) echo 4096 ;; guardian-request) echo 16384 ;; config) echo 8192 ;; jpeg-header|jpeg|gif-frames) echo 32768 ;;
        ffmpeg-image|picture) echo 65536 ;; video) echo 131072 ;; *) echo 65536 ;;
    esac
}

run_one() {
    local h=$1
    mkdir -p ".build/fuzz/corpus/$h" ".build/fuzz/artifacts/$h"
    ASAN_OPTIONS=$(asan_options "$h") "$BIN" "$h" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -max_len="$(max_len "$h")" \
        -print_final_stats=1 -artifact_prefix=".build/fuzz/artifacts/$h/" \
        ".build/fuzz/corpus/$h" "Tests/Fuzz/corpus/$h" > "$LOGS/$h.log" 2>&1 < /dev/null
    echo $? > "$LOGS/$h.rc"
}
export -f run_one max_len asan_options
export BIN FUZZ_SECONDS LOGS
echo "fuzzing $HARNESSES: ${FUZZ_SECONDS}s each, $FUZZ_JOBS at a time (logs in $LOGS)"
printf '%s\n' $HARNESSES | xargs -P "$FUZZ_JOBS" -I{} bash -c 'run_one {}'

printf '%-13s %12s %10s %8s %7s %8s  %s\n' harness executions exec/s cov ft corpus result
for h in $HARNESSES; do
    log=$LOGS/$h.log
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}')
    speed=$(grep -oE 'stat::average_exec_per_sec: +[0-9]+' "$log" | awk '{print $2}')
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<< "$last"); ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<< "$last")
    corpus=$(sed -n 's/.*corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<< "$last")
    rc=$(cat "$LOGS/$h.rc" 2>/dev/null || echo "?")
    if [ "$rc" = 0 ]; then result=clean; else
        result="FOUND: $(grep -m1 -oE 'ERROR: [A-Za-z]+: [a-z-]+|ERROR: libFuzzer: [a-z-]+|Fatal error: .*' "$log" || echo "exit $rc") (.build/fuzz/artifacts/$h/)"
        status=1
    fi
    printf '%-13s %12s %10s %8s %7s %8s  %s\n' "$h" "${execs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "${corpus:-?}" "$result"
done
exit $status
