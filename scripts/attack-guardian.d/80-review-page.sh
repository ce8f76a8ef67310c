# Sourced by scripts/attack-guardian.sh: the review page (`quarantine review`, issue 32) on the
# protected child's account and a guardian's. The child's page goes through the guardian socket:
# nothing is shown without the PIN, the wrong PIN is the service's to count; another local account
# gets nothing without the secret and cannot read the file holding it; the guardian's page lists the
# child's request first and puts the file back without the PIN. REVIEW_SHOTS=DIR saves the
# guardian page's screenshot there (scripts/review-test.py --shoot).

# A bare HTTP client: CMD ADDRESS PATH [FIELDS] -> "STATUS first-words-of-the-answer".
cat > "$work/review-client.py" <<'PY'
import http.client, re, sys
cmd, address, path = sys.argv[1], sys.argv[2], sys.argv[3]
fields = sys.argv[4] if len(sys.argv) > 4 else ""
m = re.match(r"http://127\.0\.0\.1:(\d+)/.*token=([0-9a-f]+)", address)
port, secret = int(m.group(1)), m.group(2)
cookie = f"quarantine_review_{port}={secret}" if cmd != "nosecret" else ""
def send(method, path, body=None, extra=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Cookie": cookie} if cookie else {}
    headers.update(extra or {})
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse(); text = r.read().decode(errors="replace"); c.close()
    return r.status, text
if cmd in ("get", "nosecret"):
    status, text = send("GET", path)
else:
    _, page = send("GET", sys.argv[5] if len(sys.argv) > 5 else "/")
    token = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    body = fields + ("&" if fields else "") + "csrf=" + (token.group(1) if token else "")
    status, text = send("POST", path, body, {"Content-Type": "application/x-www-form-urlencoded", "Origin": f"http://127.0.0.1:{port}"})
words = re.sub(r"<[^>]+>", " ", text)
print(status, " ".join(words.split())[:4000])
PY
chmod 644 "$work/review-client.py"

# review_start ACCOUNT_RUNNER OUT: starts `quarantine review --print-url` as that account; sets
# rp_url (its address) and adds its pid to rp_pids.
rp_pids=()
review_start() {
    local runner=$1 out=$2
    $runner "$q" review --print-url --idle-timeout 120 > "$out" 2> "$out.err" &
    rp_pids+=($!)
    for _ in $(seq 100); do grep -q '^http://' "$out" 2>/dev/null && break; sleep 0.1; done
    rp_url=$(head -1 "$out")
}

rp_card=$chome/Downloads/review-page.png
make_card "$rp_card"
wait_gone_for_child "$rp_card" 10
# The card's own item (by its original path, not the newest id): held comes first, the vault after
# the verdict, which may wait behind what earlier files left queued.
rp_waited=$SECONDS
wait_vaulted "$rp_card" 360 && rp_id=$vaulted || rp_id=
rp_waited=$((SECONDS - rp_waited))
[ -n "$rp_id" ] || attempt "review page: the card reaches the child's vault within 6 min" through "not listed after ${rp_waited} s"
[ -n "$rp_id" ] && echo "  (the card reached the child's vault ${rp_waited} s after it arrived)"
review_start as_child "$work/review-child.out"; rp_child=$rp_url
if [ -z "$rp_child" ]; then
    attempt "the child's review page starts" through "$(cat "$work/review-child.out.err")"
else
    rp_port=$(echo "$rp_child" | sed 's|http://127.0.0.1:\([0-9]*\)/.*|\1|')
    rp_child_uid=$(id -u "$child")
    # Another local account: no secret, no address file, no listening on other addresses.
    out=$(as_other /usr/bin/python3 "$work/review-client.py" nosecret "$rp_child" /)
    [[ $out == 403* ]] && attempt "review page: another account without the secret" held "$out" || attempt "review page: another account without the secret" through "$out"
    if as_other cat "/tmp/quarantine-review-$rp_child_uid/review.url" > /dev/null 2>&1; then
        attempt "review page: another account reads the child's address file" through "it is readable"
    else
        attempt "review page: another account reads the child's address file" held "refused"
    fi
    if grep -q "0.0.0.0:$rp_port\|\[::\]:$rp_port\|\*:$rp_port" <<< "$(ss -ltn 2>/dev/null)"; then
        attempt "review page: bound to loopback only" through "$(ss -ltn | grep ":$rp_port")"
    else
        attempt "review page: bound to loopback only" held "$(ss -ltn | grep ":$rp_port" | awk '{print $4}')"
    fi
    # The child, with its own secret: Show without the PIN, with a wrong one, the original.
    out=$(as_child /usr/bin/python3 "$work/review-client.py" post "$rp_child" "/show/$rp_id" "back=item" "/item/$rp_id?pane=2")
    [[ $out == 403* ]] && attempt "review page: the child's Show without the PIN" held "$out" || attempt "review page: the child's Show without the PIN" through "$out"
    out=$(as_child /usr/bin/python3 "$work/review-client.py" post "$rp_child" "/show/$rp_id" "back=item&pin=1357" "/item/$rp_id?pane=2")
    [[ $out == 403* ]] && attempt "review page: the child's Show with a wrong PIN" held "$out" || attempt "review page: the child's Show with a wrong PIN" through "$out"
    out=$(as_child /usr/bin/python3 "$work/review-client.py" get "$rp_child" "/original/$rp_id")
    [[ $out == 403* ]] && attempt "review page: the child asks for the original" held "$out" || attempt "review page: the child asks for the original" through "$out"
    out=$(as_child /usr/bin/python3 "$work/review-client.py" post "$rp_child" "/release/$rp_id" "" "/item/$rp_id?pane=2")
    if [[ $out == 403* ]] && ! child_sees_card "$rp_card"; then attempt "review page: the child's Put back without the PIN" held "$out"
    else attempt "review page: the child's Put back without the PIN" through "$out"; fi
    # Message a grown-up: the request the guardian sees.
    # (list's output is read whole before grep: under pipefail, `list | grep -q` fails whenever grep
    # stops at an early line while list is still writing (SIGPIPE), which read as "not recorded".)
    out=$(as_child /usr/bin/python3 "$work/review-client.py" post "$rp_child" "/ask/$rp_id" "" "/item/$rp_id?pane=2")
    recorded=
    for _ in $(seq 50); do grep -q '"release_requested_at"' <<< "$("$q" list --user "$child" --json)" && { recorded=yes; break; }; sleep 0.2; done
    if [ -n "$recorded" ]; then echo "ok: the child's request is recorded"
    else
        listed=$("$q" list --user "$child" --json 2>&1 | grep -F "review-page" | head -c 800)
        attempt "review page: Message a grown-up records the request" through "not recorded within 10 s: $out; list: ${listed:-no item $rp_id}"
    fi
fi

# The guardian's page: the child's account with its request first; Put back without the PIN.
review_start as_guardian "$work/review-guardian.out"; rp_guardian=$rp_url
out=$(as_guardian /usr/bin/python3 "$work/review-client.py" get "$rp_guardian" /guardian)
if [[ $out == 200* && $out == *"$child"* && $out == *"Asked back"* ]]; then
    [ -n "${REVIEW_SHOTS:-}" ] && /usr/bin/python3 "$here/review-test.py" --shoot "$rp_guardian" /guardian "$REVIEW_SHOTS/guardian.png" > /dev/null 2>&1
    out=$(as_guardian /usr/bin/python3 "$work/review-client.py" post "$rp_guardian" "/release/$rp_id" "user=$child&back=guardian" /guardian)
    if [[ $out == 303* ]] && child_sees_card "$rp_card"; then echo "ok: the guardian's page put item $rp_id back without the PIN"
    else attempt "review page: the guardian puts the child's item back" through "not done: $out"; fi
else
    attempt "review page: the guardian's page lists $child's request" through "${out:0:300}"
fi
# Another account is no guardian: its page lists no protected account.
review_start as_other "$work/review-other.out"; rp_other=$rp_url
out=$(as_other /usr/bin/python3 "$work/review-client.py" get "$rp_other" /guardian)
[[ $out == 403* ]] && attempt "review page: another account's guardian page" held "$out" || attempt "review page: another account's guardian page" through "$out"
for pid in "${rp_pids[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
# Their pages' private folders (no XDG_RUNTIME_DIR under runuser: /tmp/quarantine-review-UID).
for u in "$child" "$guardian" "$other"; do rm -rf "/tmp/quarantine-review-$(id -u "$u")"; done
