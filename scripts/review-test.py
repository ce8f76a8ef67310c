#!/usr/bin/python3
"""Browser tests of `quarantine review` (issue 32), in headless Chromium through chromedriver.

What a person sees and does, checked against what the CLI says (`list --json`, `history --json`):
- the grid shows blurred previews only: a crop of a preview from the browser's screenshot is not
  recognised as the synthetic test card by `quarantine scan`, and after Show a crop of the shown
  picture is (so the check can fail);
- Put back, Delete and Block this site do what `release`, `block` and `block --origin` do;
- child mode: the two panes in order, "Message a grown-up" records the request, Show is refused
  without the PIN, wrong PINs are rate-limited by the core;
- requests without the secret, with a foreign Origin, or without the CSRF token are refused.

Usage: review-test.py BINARY [--quick] [--screenshots DIR]
       review-test.py --shoot ADDRESS PATH FILE   (a screenshot of one view of a running page)
  --quick        the short part `make test` runs (the refusals, blurred/shown, the child's panes)
  --screenshots  save a screenshot of each view (docs/review/*.png)
"""
import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

MODELS = os.environ.get("QUARANTINE_DATA_DIR") or os.path.expanduser("~/.local/share/quarantine")
passed = 0
failed = 0


def check(condition, what):
    global passed, failed
    if condition:
        passed += 1
        print(f"ok: {what}")
    else:
        failed += 1
        print(f"FAILED: {what}")


class Account:
    """An account's own quarantine (its home, vault, configuration) in a fresh folder."""

    def __init__(self, root, binary, mode, pin=None):
        self.binary = binary
        self.home = os.path.join(root, "home")
        self.downloads = os.path.join(self.home, "Downloads")
        self.runtime = os.path.join(root, "run")
        for folder in (self.downloads, self.runtime, os.path.join(self.home, ".config/quarantine")):
            os.makedirs(folder, mode=0o700, exist_ok=True)
        os.chmod(self.runtime, 0o700)
        with open(os.path.join(self.home, ".config/quarantine/config.toml"), "w") as config:
            config.write(f'mode = "{mode}"\n')
        self.env = {"PATH": "/usr/bin:/bin", "HOME": self.home, "XDG_RUNTIME_DIR": self.runtime,
                    "XDG_CONFIG_HOME": os.path.join(self.home, ".config"), "QUARANTINE_DATA_DIR": MODELS, "LANG": "C.UTF-8"}
        if pin:
            self.run("guardian", "set-pin", "--pin-stdin", input=f"{pin}\n{pin}\n")
        if mode == "child":
            # The mode is recorded (as `quarantine mode child` does), not only written.
            self.run("mode", "child", check=False)

    def run(self, *args, input=None, check=True):
        done = subprocess.run([self.binary, *args], env=self.env, input=input, capture_output=True, text=True, timeout=120)
        if check and done.returncode != 0:
            raise RuntimeError(f"quarantine {' '.join(args)}: {done.returncode}\n{done.stdout}{done.stderr}")
        return done

    def card(self, name, origin=None):
        path = os.path.join(self.downloads, name)
        self.run("testcard", "--size", "512x512", path)
        if origin:
            os.setxattr(path, "user.xdg.origin.url", origin.encode())
        return path

    def hide_all(self):
        self.run("scan", "--quarantine", self.downloads, check=False)

    def items(self, all=False):
        out = self.run("list", "--json", *(["--all"] if all else [])).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def history(self):
        out = self.run("history", "--json").stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def flagged(self, png_bytes, folder, name):
        """Whether `quarantine scan` recognises the test card in these PNG bytes."""
        path = os.path.join(folder, name)
        with open(path, "wb") as out:
            out.write(png_bytes)
        done = self.run("scan", "--json", path, check=False)
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        return any(line.get("sensitive") or line.get("flagged") for line in lines), done.stdout.strip()

    def start_review(self):
        process = subprocess.Popen([self.binary, "review", "--print-url", "--idle-timeout", "300"], env=self.env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        url = process.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            process.kill()
            raise RuntimeError(f"no address from quarantine review: {url!r} {process.stderr.read()}")
        return process, url


class Raw:
    """Requests as no browser sends them: without the cookie, from another origin, without the token."""

    def __init__(self, url):
        match = re.match(r"http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]+)", url)
        self.port, self.secret = int(match.group(1)), match.group(2)
        self.cookie = f"quarantine_review_{self.port}={self.secret}"

    def send(self, method, path, headers=None, body=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        connection.request(method, path, body=body, headers=headers or {})
        answer = connection.getresponse()
        text = answer.read().decode(errors="replace")
        connection.close()
        return answer.status, text

    def csrf(self):
        status, page = self.send("GET", "/", {"Cookie": self.cookie})
        match = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
        return match.group(1) if match else None

    def post(self, path, fields, origin=None, cookie=True):
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Origin": origin or f"http://127.0.0.1:{self.port}"}
        if cookie:
            headers["Cookie"] = self.cookie
        return self.send("POST", path, headers, fields)


def browser(downloads):
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000", f"--user-data-dir={downloads}/profile",
                 "--force-device-scale-factor=1", "--hide-scrollbars"):
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def save(driver, folder, name):
    if folder:
        os.makedirs(folder, exist_ok=True)
        driver.save_screenshot(os.path.join(folder, name))


def navigates(driver, action):
    """Does `action` (a click, a key that submits a form) and waits for the page that answers it.

    click() and send_keys() return once the browser has the event, not once the next page is
    there: reading the page or the database right after them raced the answer (CI, session 50).
    """
    old = driver.find_element(By.TAG_NAME, "html")
    action()
    WebDriverWait(driver, 30).until(lambda d: is_stale(old))
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")


def is_stale(element):
    """Whether `element` has left the document. Asked while the old page is being torn down,
    Chrome may answer neither "stale" nor the element's state but an inspector error, "Node with
    given id does not belong to the document" (make test, session 51): the node is gone too.
    expected_conditions.staleness_of let that error through and ended the run."""
    try:
        element.is_enabled()
        return False
    except StaleElementReferenceException:
        return True
    except WebDriverException as error:
        if "does not belong to the document" in str(error):
            return True
        raise


def card_element(driver, item_id):
    return driver.find_element(By.ID, f"item-{item_id}")


def submit_in(driver, item_id, label):
    """Opens the item's options menu (a click on its summary, unless the menu is open already:
    a second click would close it) and presses `label`."""
    card = card_element(driver, item_id)
    menu = card.find_element(By.TAG_NAME, "details")
    if not menu.get_attribute("open"):
        card.find_element(By.TAG_NAME, "summary").click()
    for button in card.find_elements(By.TAG_NAME, "button"):
        if button.text.strip() == label:
            navigates(driver, button.click)
            return
    raise RuntimeError(f"no {label} on item {item_id} (menu open: {menu.get_attribute('open')})")


def adult(binary, work, shots, quick):
    account = Account(os.path.join(work, "adult"), binary, "adult")
    names = ["a-card.png"] if quick else ["a-card.png", "b-putback.png", "c-delete.png", "d-site.png"]
    for name in names:
        account.card(name, origin="https://pictures.bad.example/d.png" if name == "d-site.png" else None)
        time.sleep(1.1)  # distinct times: newest first
    account.hide_all()
    items = {os.path.basename(item["original_path"]): item for item in account.items()}
    check(set(items) == set(names), f"the cards are in the vault ({sorted(items)})")
    process, url = account.start_review()
    raw = Raw(url)
    driver = browser(work)
    try:
        # Refused: no secret, a foreign Origin, no CSRF token (nothing changes).
        first = items[names[0]]["id"]
        check(raw.send("GET", "/")[0] == 403, "a request without the secret is refused")
        csrf = raw.csrf()
        check(csrf is not None, "the page's forms carry a CSRF token")
        check(raw.post(f"/delete/{first}", f"csrf={csrf}", origin="http://evil.example")[0] == 403, "a foreign Origin is refused")
        check(raw.post(f"/delete/{first}", "")[0] == 403, "a form without the CSRF token is refused")
        check(raw.post(f"/delete/{first}", f"csrf={csrf}", cookie=False)[0] == 403, "a form without the secret is refused")
        check(raw.send("GET", f"/original/{first}", {"Cookie": raw.cookie})[0] == 403, "no original before Show")
        check(any(i["id"] == first for i in account.items()), "the refused requests changed nothing")

        # Opened as the notification's Show preview and `quarantine review` open it: a launcher
        # file (file://) whose refresh leads to the address with the secret. A cross-site start:
        # Chromium sends no SameSite=Strict cookie along a redirect from there (it answered 403).
        launcher = os.path.join(work, "open.html")
        with open(launcher, "w") as f:
            f.write(f'<!DOCTYPE html><html><head><meta http-equiv="refresh" content="0; url={url}"></head></html>')
        driver.get("file://" + launcher)
        try:
            entered = WebDriverWait(driver, 10).until(lambda d: d.current_url.startswith("http://127.0.0.1") and "token" not in d.current_url
                                                      and d.find_elements(By.CSS_SELECTOR, "main"))
        except Exception:
            entered = False
        check(bool(entered) and "Refused" not in driver.title and "Not served" not in driver.title, f"a launcher file (file://) leads into the page ({driver.current_url.split('?')[0]}, {driver.title!r})")
        check(driver.current_url.endswith("/") and "token" not in driver.current_url, "the secret leaves the address bar (cookie, then the page's own refresh)")
        order = [int(e.get_attribute("id").split("-")[1]) for e in driver.find_elements(By.CSS_SELECTOR, "article.item")]
        check(order == sorted(order, reverse=True), f"newest first ({order})")
        check(not driver.find_elements(By.CSS_SELECTOR, "img.original"), "the grid shows no original")
        text = driver.find_element(By.ID, f"item-{first}").text
        check("Hidden a photo that may be sensitive" in text, "why, in the notification's words")
        save(driver, shots, "adult-grid.png")
        preview = card_element(driver, first).find_element(By.CSS_SELECTOR, "img.preview")
        flagged, out = account.flagged(preview.screenshot_as_png, work, "crop-preview.png")
        check(not flagged, f"a crop of the blurred preview is not the card ({out[:120]})")
        # Show: keyboard only (focus the button, Enter).
        show = card_element(driver, first).find_element(By.XPATH, ".//button[normalize-space()='Show']")
        navigates(driver, lambda: show.send_keys("\n"))
        shown = driver.find_elements(By.CSS_SELECTOR, f"#item-{first} img.original")
        if not shown:
            raise RuntimeError("Show did not show it: " + driver.find_element(By.TAG_NAME, "main").text[:500])
        shown = shown[0]
        WebDriverWait(driver, 30).until(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", shown))
        flagged, out = account.flagged(shown.screenshot_as_png, work, "crop-shown.png")
        check(flagged, f"after Show, a crop of the picture is the card ({out[:120]})")
        save(driver, shots, "adult-show.png")
        if shots:
            # The desktop's dark preference (prefers-color-scheme), as the page follows it.
            driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
            background = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
            check(background == "rgb(18, 18, 18)", f"dark preference: a dark page ({background})")
            save(driver, shots, "adult-show-dark.png")
            driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
        check(raw.send("GET", f"/original/{first}", {"Cookie": raw.cookie})[0] == 200, "after Show the original is served")
        check(any(e["kind"] == "shown" and e.get("item") == first for e in account.history()), "Show is in the history")

        if not quick:
            # Keyboard only: Tab from the top reaches a Show button, and Enter on an Options menu opens it.
            driver.get(f"http://127.0.0.1:{raw.port}/")
            body = driver.find_element(By.TAG_NAME, "body")
            reached = []
            for _ in range(20):
                ActionChains(driver).send_keys(Keys.TAB).perform()
                active = driver.switch_to.active_element
                reached.append(active.tag_name + ":" + active.text.strip().split("\n")[0])
                if active.tag_name == "button" and active.text.strip() == "Show":
                    break
            check(reached[0] == "a:Skip to the content" and reached[-1] == "button:Show", f"Tab order reaches Show ({reached})")
            ActionChains(driver).send_keys(Keys.TAB).perform()
            summary = driver.switch_to.active_element
            ActionChains(driver).send_keys(Keys.ENTER).perform()
            opened = summary.tag_name == "summary" and driver.execute_script("return arguments[0].parentElement.open", summary)
            check(bool(opened), "Enter opens the Options menu")
            # Put back: as `quarantine release`.
            putback = items["b-putback.png"]
            submit_in(driver, putback["id"], "Put back")
            check(not any(i["id"] == putback["id"] for i in account.items()), "Put back: gone from the vault")
            check(os.path.exists(putback["original_path"]), "Put back: the file is where it was")
            check(any(e["kind"] == "released" and e.get("item") == putback["id"] for e in account.history()), "Put back: 'released' in the history")
            # Delete: as `quarantine block`.
            delete = items["c-delete.png"]
            submit_in(driver, delete["id"], "Delete")
            status = {i["id"]: i["status"] for i in account.items(all=True)}
            check(status.get(delete["id"]) == "blocked" and not os.path.exists(delete["original_path"]), f"Delete: blocked and not back ({status.get(delete['id'])})")
            # Block this site: as `quarantine block --origin`.
            site = items["d-site.png"]
            submit_in(driver, site["id"], "Block this site")
            status = {i["id"]: i["status"] for i in account.items(all=True)}
            details = " ".join(e.get("detail") or "" for e in account.history() if e.get("item") == site["id"])
            check(status.get(site["id"]) == "blocked" and "pictures.bad.example" in details, f"Block this site: blocked, the site too ({details})")
            check("pictures.bad.example is blocked" in driver.page_source, "Block this site: the page says so")
            driver.get(f"http://127.0.0.1:{raw.port}/history")
            save(driver, shots, "adult-history.png")
            driver.get(f"http://127.0.0.1:{raw.port}/settings")
            save(driver, shots, "adult-settings.png")
            check("Watched folders" in driver.page_source, "the settings page lists the watched folders")
    finally:
        driver.quit()
        process.terminate()
        process.wait(timeout=10)


def child(binary, work, shots, quick):
    account = Account(os.path.join(work, "child"), binary, "child", pin="2468")
    account.card("photo.png")
    account.hide_all()
    items = account.items()
    check(len(items) == 1, "child mode: the card is in the vault")
    item = items[0]["id"]
    process, url = account.start_review()
    raw = Raw(url)
    driver = browser(work + "/child-browser")
    try:
        driver.get(url)
        check("Pictures we put away for you" in driver.page_source, "child mode: plain words")
        check(not driver.find_elements(By.XPATH, "//button[normalize-space()='Show']"), "child mode: no Show on the list")
        navigates(driver, driver.find_element(By.LINK_TEXT, "What is this?").click)
        body = driver.find_element(By.TAG_NAME, "main").text
        check("Step 1 of 2" in body and "might show private parts of the body" in body, "pane 1 explains")
        links = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".choices a")]
        check(links == ["Not now", "I'm sure"], f"pane 1 offers Not now, then I'm sure ({links})")
        check(not driver.find_elements(By.NAME, "pin"), "pane 1 has no PIN field")
        save(driver, shots, "child-pane1.png")
        navigates(driver, driver.find_element(By.LINK_TEXT, "I'm sure").click)
        body = driver.find_element(By.TAG_NAME, "main").text
        check("Step 2 of 2" in body, "I'm sure raises pane 2")
        labels = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".choices button, .choices a")]
        check(labels[:2] == ["Message a grown-up", "Get help"], f"pane 2 offers Message a grown-up, Get help ({labels})")
        check(driver.find_element(By.CSS_SELECTOR, "label[for=pin-show]").text == "Guardian PIN", "the PIN field is labelled")
        save(driver, shots, "child-pane2.png")
        navigates(driver, driver.find_element(By.XPATH, "//button[normalize-space()='Message a grown-up']").click)
        check("We told a grown-up" in driver.page_source, "Message a grown-up: the page says a grown-up was told")
        asked = [i for i in account.items() if i["id"] == item and i.get("release_requested_at")]
        check(bool(asked), "Message a grown-up records the release request")
        csrf = raw.csrf()
        status, _ = raw.post(f"/show/{item}", f"csrf={csrf}&back=item")
        check(status == 403, "Show without the PIN is refused")
        check(raw.send("GET", f"/original/{item}", {"Cookie": raw.cookie})[0] == 403, "no original without the PIN")
        # Wrong PINs, typed in the page: the core's limit answers.
        limited = False
        for attempt in range(6):
            driver.get(f"http://127.0.0.1:{raw.port}/item/{item}?pane=2")
            field = driver.find_element(By.ID, "pin-show")
            field.send_keys("1111\n")
            WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "p.error"))
            text = driver.find_element(By.TAG_NAME, "main").text
            if "Too many wrong PINs" in text or "must wait" in text:
                limited = True
                break
            check("That PIN is not right" in text, f"wrong PIN {attempt + 1} is refused")
        check(limited, "wrong PINs are rate-limited")
        check(raw.send("GET", f"/original/{item}", {"Cookie": raw.cookie})[0] == 403, "still no original")
        check(not driver.find_elements(By.CSS_SELECTOR, "img.original"), "the page shows no original")
    finally:
        driver.quit()
        process.terminate()
        process.wait(timeout=10)


def shoot(address, path, file):
    """A screenshot of `path` on the page at `address` (its secret sets the cookie first)."""
    folder = tempfile.mkdtemp(prefix="quarantine-review-shot-")
    driver = browser(folder)
    try:
        driver.get(address)
        driver.get(re.sub(r"/[^/]*\?token=.*", "", address) + path)
        driver.save_screenshot(file)
    finally:
        driver.quit()
        shutil.rmtree(folder, ignore_errors=True)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--shoot":
        shoot(*sys.argv[2:])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--screenshots")
    arguments = parser.parse_args()
    binary = os.path.abspath(arguments.binary)
    work = tempfile.mkdtemp(prefix="quarantine-review-test-")
    os.chmod(work, 0o755)
    started = time.time()
    try:
        adult(binary, work, arguments.screenshots, arguments.quick)
        child(binary, work, arguments.screenshots, arguments.quick)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"review page: {time.time() - started:.1f} s")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
