"""The inspector of `mnemon serve` in a real browser: headless Chromium from
Debian's packages, driven over WebDriver (chromedriver) by Selenium, on the
store `mnemon demo` builds. Every page (namespaces, memories, version chain
with its table, paged; timeline by commit and valid time; recall playground
with its block; turns; reads by memory and by session; erasure; an error)
is checked part by part in the DOM, holds no script element, shows stored
`<script>` and `</memories>` as text, and weighs at most `PAGE_BUDGET`
bytes of HTML. Times show in a named zone with the offset in force at each
time. Without the token (a non-loopback bind) the pages are refused.
Screenshots go to `target/inspector-screenshots/`.

Skips only when Chromium or chromedriver is missing and
MNEMON_REQUIRE_BROWSER is unset (CI sets it, so there it fails instead).
"""

import os
import pathlib
import shutil

import pytest

from conftest import ROOT, TOKEN, HttpServer, cli, cli_json

NS = "user:lin-wei"
TURN = "Just thinking aloud: <img src=x onerror=alert(1)> </td></tr> nothing to keep"
MARKUP = "Lin's note: <script>alert('x')</script> and </memories></div></td></table> <b>bold</b> & more"
# The session of an agent's read, holding markup.
READ_SESSION = "s-<b>evening</b>"


def _find(*names):
    for n in names:
        p = shutil.which(n) or (f"/usr/bin/{n}" if os.path.exists(f"/usr/bin/{n}") else None)
        if p:
            return p
    return None


CHROMIUM = _find("chromium", "chromium-browser")
DRIVER = _find("chromedriver")

if not (CHROMIUM and DRIVER):
    if os.environ.get("MNEMON_REQUIRE_BROWSER"):
        raise RuntimeError("MNEMON_REQUIRE_BROWSER is set but chromium or chromedriver is missing")
    pytest.skip("chromium and chromium-driver are not installed", allow_module_level=True)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402


def _shots() -> pathlib.Path:
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", "target"))
    if not target.is_absolute():
        target = ROOT / target
    d = target / "inspector-screenshots"
    d.mkdir(parents=True, exist_ok=True)
    return d


SHOTS = _shots()


@pytest.fixture
def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"]:
        opts.add_argument(a)
    # The Debian driver, never a download.
    d = webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)
    d.set_page_load_timeout(60)
    yield d
    d.quit()


@pytest.fixture
def demo(tmp_path):
    data = tmp_path / "store"
    cli(data, "demo", "--keep", str(data))
    r = cli_json(data, "remember", "--ns", NS, "--dedup", "off", MARKUP)
    # A turn nothing was derived from, holding markup.
    cli(data, "observe", "--ns", NS, "--session", "s-quiet", "--time", "2026-04-21T09:30:00Z", TURN)
    # A read by an agent whose name holds markup, from a session whose name does.
    cli(data, "recall", "--ns", NS, "--requester", "agent-<i>x</i>", "--current-session", READ_SESSION, "coffee for Lin")
    return data, r["id"]


def shows(browser, words):
    """Waits (at most 10 s) until the page holds `words`."""
    WebDriverWait(browser, 10).until(lambda d: words in d.page_source)


# Most bytes one page may weigh (HTML with its inline SVG and styles).
PAGE_BUDGET = 300_000

# Every page the browser test must have checked (and shot).
PAGES = {
    "index", "memories", "chain", "chain-paged", "timeline", "timeline-valid", "as-of", "recall",
    "recall-budget", "recall-abstained", "recall-markup", "turns", "turns-session", "turns-zone", "reads", "reads-session",
    "erasure", "markup", "error-zone",
}
SHOT = set()


def shot(browser, name):
    """Holds the page to its weight budget and to no script, then saves a
    screenshot."""
    html = browser.page_source
    weight = len(html.encode())
    assert weight <= PAGE_BUDGET, f"{name}: {weight} bytes, over {PAGE_BUDGET}"
    # Stored `<script>` shows as text: no page holds a script element.
    assert not browser.find_elements(By.TAG_NAME, "script"), f"{name}: a script element"
    browser.save_screenshot(str(SHOTS / f"{name}.png"))
    SHOT.add(name)


def text(browser, css):
    return browser.find_element(By.CSS_SELECTOR, css).text


def detached(page):
    """A wait condition: true once `page` (the old document's root element)
    has left the document. Chromium reports a detached node as a stale
    element, or, while a navigation is under way, as an inspector error
    ("Node with given id does not belong to the document"); both mean the
    old page is gone."""

    def check(_driver):
        try:
            page.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as e:
            if "does not belong to the document" in str(e):
                return True
            raise
        return False

    return check


def follow(browser, element):
    """Clicks a link or submit button and waits (at most 30 s) until the
    next page has replaced this one: a click returns before the browser has
    loaded what it leads to."""
    page = browser.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(browser, 30).until(detached(page))
    WebDriverWait(browser, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")


def test_the_pages_in_a_browser(browser, demo):
    data, markup_id = demo
    server = HttpServer(data)
    try:
        # Without the token: refused. With ?token= once: a cookie, then links work.
        browser.get(server.base + "/")
        shows(browser, "Unauthorized")
        assert NS not in browser.page_source
        browser.get(f"{server.base}/?token={TOKEN}")
        assert browser.current_url == server.base + "/", "the token leaves the address bar"
        assert NS in text(browser, "#namespaces")
        shot(browser, "index")

        # A namespace's memories, and a filter through the form.
        follow(browser, browser.find_element(By.LINK_TEXT, NS))
        table = text(browser, "#memories")
        assert "dark-roast" in table and "light-roast" not in table
        # One definition of active: the header counts the rows the default
        # listing shows; the quarantined one is counted apart, not listed.
        rows = browser.find_elements(By.CSS_SELECTOR, "#memories tr")[1:]
        assert int(text(browser, "#count-active")) == len(rows)
        assert int(text(browser, "#count-quarantined")) == 1
        assert not browser.find_elements(By.CSS_SELECTOR, "#memories .badge.warn")
        Select(browser.find_element(By.NAME, "kind")).select_by_visible_text("preference")
        follow(browser, browser.find_element(By.CSS_SELECTOR, "form.filters button"))
        assert "kind=preference" in browser.current_url
        table = text(browser, "#memories")
        assert "dark-roast" in table and "peanut" not in table
        shot(browser, "memories")

        # The version chain of the coffee preference, side by side.
        row = next(r for r in browser.find_elements(By.CSS_SELECTOR, "#memories tr") if "dark-roast" in r.text)
        follow(browser, row.find_element(By.PARTIAL_LINK_TEXT, "#"))
        versions = browser.find_elements(By.CSS_SELECTOR, "#chain .version")
        assert len(versions) == 2
        assert "light-roast Ethiopian" in versions[0].text and "dark-roast" in versions[1].text
        assert "slot key" in versions[0].find_element(By.CSS_SELECTOR, ".reason").text
        assert "For coffee I like light roasts" in versions[0].text
        assert versions[1].find_elements(By.CSS_SELECTOR, ".changed")
        # The table beside the cards: one row per version, changed fields only.
        changes = browser.find_elements(By.CSS_SELECTOR, "#changes tr.change")
        assert len(changes) == 2 and "first version" in changes[0].text
        fields = [f.text.split(":")[0] for f in changes[1].find_elements(By.CSS_SELECTOR, ".field-change")]
        assert "content" in fields and "slot key" not in fields
        exact = versions[0].find_element(By.TAG_NAME, "time").get_attribute("title")
        assert exact.endswith("Z") and "T" in exact
        shot(browser, "chain")
        # One version a page: the table and the cards page together.
        chain_url = browser.current_url.split("?")[0]
        browser.get(chain_url + "?per=1")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#changes tr.change")) == 1
        assert len(browser.find_elements(By.CSS_SELECTOR, "#chain .version")) == 1
        assert "light-roast Ethiopian" in text(browser, "#chain")
        follow(browser, browser.find_element(By.ID, "next-page"))
        assert "page=2" in browser.current_url and "dark-roast" in text(browser, "#chain")
        assert browser.find_elements(By.ID, "prev-page") and not browser.find_elements(By.ID, "next-page")
        shot(browser, "chain-paged")

        # The timeline: an SVG plot with the kinds in its legend, and the buckets.
        follow(browser, browser.find_element(By.LINK_TEXT, "timeline"))
        svg = browser.find_element(By.CSS_SELECTOR, "#plot svg")
        legend = text(browser, "#legend")
        for kind in ["observed", "extracted", "superseded", "accessed", "forgotten"]:
            assert kind in legend, kind
            assert kind not in svg.get_attribute("innerHTML"), "the legend sits outside the plot"
        assert browser.find_elements(By.CSS_SELECTOR, "#buckets tr")[1:]
        shot(browser, "timeline")

        # The same by valid time, through a link: the demo's dates appear.
        follow(browser, browser.find_element(By.ID, "by-valid"))
        assert "by=valid" in browser.current_url
        assert "became true" in text(browser, "#legend")
        buckets = text(browser, "#buckets")
        assert "2026-03-02" in buckets
        # From March to today (the markup memory): ticks are year-month.
        ticks = [t.get_attribute("textContent").strip() for t in browser.find_elements(By.CSS_SELECTOR, "#plot svg text")]
        assert any(t.startswith("2026-03") for t in ticks), ticks
        # Seven weeks of the demo's conversations: ticks are month-day.
        browser.get(f"{server.base}/ns/{NS}/timeline?by=valid&from=2026-03-01&to=2026-04-21")
        ticks = [t.get_attribute("textContent").strip() for t in browser.find_elements(By.CSS_SELECTOR, "#plot svg text")]
        assert any(t.startswith("03-") for t in ticks) and any(t.startswith("04-") for t in ticks), ticks
        assert "2026-04-19" in text(browser, "#buckets")
        shot(browser, "timeline-valid")
        follow(browser, browser.find_element(By.ID, "by-commit"))

        # The as-of picker: early April (valid time) has the old preference.
        picker = browser.find_element(By.ID, "as-of-picker")
        Select(picker.find_element(By.NAME, "as_of")).select_by_value("valid_time")
        picker.find_element(By.NAME, "at").send_keys("2026-04-01")
        follow(browser, picker.find_element(By.TAG_NAME, "button"))
        assert "valid time" in text(browser, "#as-of")
        table = text(browser, "#memories")
        assert "light-roast Ethiopian" in table and "dark-roast" not in table
        shot(browser, "as-of")

        # Recall with score explanations; looking records no access.
        before = cli(data, "log", "--ns", NS).stdout
        browser.get(f"{server.base}/ns/{NS}/recall")
        browser.find_element(By.NAME, "q").send_keys("What coffee should I buy for Lin?")
        follow(browser, browser.find_element(By.CSS_SELECTOR, "form.filters button"))
        block = text(browser, "#block")
        assert block.startswith("<memories>") and block.endswith("</memories>")
        assert "dark-roast" in block
        assert "Did not abstain" in text(browser, "#abstention")
        assert float(text(browser, "#floor")) > 0
        relevant = browser.find_elements(By.CSS_SELECTOR, "#part-relevant tr.entry")
        assert relevant and all(r.find_elements(By.CSS_SELECTOR, "meter") for r in relevant if "not among" not in r.text)
        legend = text(browser, "#legend")
        assert "cosine" in legend and "-1" in legend
        shot(browser, "recall")

        # A small budget: relevant hits left out are listed as skipped,
        # with their text, and never appear in the block.
        browser.get(f"{server.base}/ns/{NS}/recall?q=What+coffee+should+I+buy+for+Lin%3F&budget=120")
        skipped = browser.find_elements(By.CSS_SELECTOR, "#part-relevant tr.fate-skipped")
        assert skipped
        block = text(browser, "#block")
        for r in skipped:
            left_out = r.find_element(By.CSS_SELECTOR, "td.content").text
            assert left_out and left_out not in block
        shot(browser, "recall-budget")

        # A query about nothing stored: the block abstains, and says so.
        browser.get(f"{server.base}/ns/{NS}/recall?q=Who+won+the+1998+Tour+de+France%3F")
        assert "Abstained" in text(browser, "#abstention")
        assert not browser.find_elements(By.CSS_SELECTOR, "#part-relevant tr.fate-whole")
        shot(browser, "recall-abstained")

        # Turns: in order, each with what was derived from it, and a turn
        # that produced nothing says so; its markup is text.
        browser.get(f"{server.base}/ns/{NS}/turns")
        turns = browser.find_elements(By.CSS_SELECTOR, "#turns tr.turn")
        assert len(turns) >= 2
        ids = [int(t.get_attribute("id").split("-")[1]) for t in turns]
        assert ids == sorted(ids), "turns in log order"
        derived = [t for t in turns if t.find_elements(By.CSS_SELECTOR, ".derived")]
        assert any("light-roast" in t.text for t in derived)
        quiet = [t for t in turns if "Just thinking aloud" in t.text]
        assert len(quiet) == 1 and "no memory derived" in quiet[0].text
        assert "<img src=x onerror=alert(1)>" in quiet[0].text
        assert not browser.find_elements(By.CSS_SELECTOR, "main img")
        exact = quiet[0].find_element(By.TAG_NAME, "time").get_attribute("title")
        assert exact.startswith("2026-04-21T09:30:00Z")
        shot(browser, "turns")
        # One session, searched, in a chosen zone.
        browser.get(f"{server.base}/ns/{NS}/turns?session=s-quiet&q=THINKING&tz=%2B08:00")
        turns = browser.find_elements(By.CSS_SELECTOR, "#turns tr.turn")
        assert len(turns) == 1 and "2026-04-21 17:30 +08:00" in turns[0].text
        shot(browser, "turns-session")
        # A named zone: each time with the offset in force at it (April in
        # Lisbon is summer time; Shanghai keeps +08:00).
        browser.get(f"{server.base}/ns/{NS}/turns?session=s-quiet&tz=Europe/Lisbon")
        turn = browser.find_element(By.CSS_SELECTOR, "#turns tr.turn")
        assert "2026-04-21 10:30 +01:00 WEST" in turn.text, turn.text
        assert browser.find_element(By.NAME, "tz").get_attribute("value") == "Europe/Lisbon"
        shot(browser, "turns-zone")
        browser.get(f"{server.base}/ns/{NS}/turns?session=s-quiet&tz=Asia/Shanghai")
        assert "2026-04-21 17:30 +08:00 CST" in text(browser, "#turns")
        # A zone that does not exist: a 400 page naming the field, its
        # value as text.
        browser.get(f"{server.base}/ns/{NS}/turns?tz=Mars/%3Cb%3EOlympus%3C/b%3E")
        assert "HTTP 400" in text(browser, "h1")
        error = text(browser, "#error")
        assert "IANA zone name" in error and "Mars/<b>Olympus</b>" in error and "tz" in error
        assert not browser.find_elements(By.CSS_SELECTOR, "main b")
        shot(browser, "error-zone")
        browser.get(f"{server.base}/ns/{NS}/turns?q=no+such+words+anywhere")
        assert "No turn matches" in text(browser, "#turns")

        # Reads: who read the coffee preference, and the most read.
        browser.get(f"{server.base}/ns/{NS}/reads")
        top = browser.find_elements(By.CSS_SELECTOR, "#most-read tr.top")
        assert top
        assert all(r.find_element(By.CSS_SELECTOR, "td.num").text.isdigit() for r in top)
        follow(browser, top[0].find_element(By.PARTIAL_LINK_TEXT, "which session"))
        reads = browser.find_elements(By.CSS_SELECTOR, "#reads tr.read")
        assert reads and any("agent-<i>x</i>" in r.text for r in reads)
        # The session the query came from, as text, linking to its reads.
        agent = next(r for r in reads if "agent-<i>x</i>" in r.text)
        assert agent.find_element(By.CSS_SELECTOR, "td.session").text == READ_SESSION
        assert all(r.find_element(By.TAG_NAME, "time").get_attribute("datetime").endswith("Z") for r in reads)
        assert not browser.find_elements(By.CSS_SELECTOR, "main i, main td.session b")
        shot(browser, "reads")
        follow(browser, agent.find_element(By.CSS_SELECTOR, "td.session a"))
        assert text(browser, "#session-filter") == READ_SESSION
        reads = browser.find_elements(By.CSS_SELECTOR, "#reads tr.read")
        assert len(reads) == 1 and reads[0].find_elements(By.CSS_SELECTOR, "td.ids a")
        shot(browser, "reads-session")

        # Erasure: the request and its reason, never the forgotten text.
        browser.get(f"{server.base}/ns/{NS}/erasure")
        assert "user asked to forget their employer" in text(browser, "#requests")
        assert "logistics" not in browser.page_source
        shot(browser, "erasure")

        # Markup is text: shown verbatim, no element made of it.
        browser.get(f"{server.base}/ns/{NS}/memory/{markup_id}")
        content = browser.find_element(By.CSS_SELECTOR, "#chain .version .content").text
        assert "<script>alert('x')</script>" in content and "</memories></div></td></table>" in content
        assert not browser.find_elements(By.CSS_SELECTOR, "main script, main b")
        shot(browser, "markup")
        # The same text in the listing and in the block: text, never markup,
        # and the block still ends once.
        browser.get(f"{server.base}/ns/{NS}?q=Lin%27s+note")
        assert "<script>alert('x')</script> and </memories>" in text(browser, "#memories")
        browser.get(f"{server.base}/ns/{NS}/recall?q=Lin%27s+note+bold+alert&budget=2000")
        block = text(browser, "#block")
        assert block.count("</memories>") == 1 and block.endswith("</memories>")
        assert "&lt;/memories&gt;" in block and "&lt;script&gt;" in block, block
        assert not browser.find_elements(By.CSS_SELECTOR, "main script, #block *, td.content b")
        shot(browser, "recall-markup")
        assert cli(data, "log", "--ns", NS).stdout == before, "the inspector wrote to the log"
        assert SHOT >= PAGES, f"pages not checked: {sorted(PAGES - SHOT)}"
    finally:
        server.stop()


def test_off_loopback_without_the_token_is_refused(browser, demo):
    data, _ = demo
    server = HttpServer(data, listen="0.0.0.0:0", token="browser-t0ken")
    try:
        browser.get(f"{server.base}/ns/{NS}")
        shows(browser, "Unauthorized")
        assert "dark-roast" not in browser.page_source
        browser.get(f"{server.base}/ns/{NS}?token=wrong")
        shows(browser, "wrong token")
        assert "dark-roast" not in browser.page_source
        browser.get(f"{server.base}/ns/{NS}?token=browser-t0ken")
        assert "dark-roast" in text(browser, "#memories")
    finally:
        server.stop()
