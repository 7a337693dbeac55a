"""The inspector of `mnemon serve` in a real browser: headless Chromium from
Debian's packages, driven over WebDriver (chromedriver) by Selenium, on the
store `mnemon demo` builds. The pages load, the version chain and the
timeline show the demo's entries, the as-of picker shows the old coffee
preference, stored markup renders as text, and without the token (a
non-loopback bind) the pages are refused. Screenshots go to
`target/inspector-screenshots/`.

Skips only when Chromium or chromedriver is missing and
MNEMON_REQUIRE_BROWSER is unset (CI sets it, so there it fails instead).
"""

import os
import pathlib
import shutil

import pytest

from conftest import ROOT, TOKEN, HttpServer, cli, cli_json

NS = "user:lin-wei"
MARKUP = "Lin's note: <script>alert('x')</script> and </div></td></table> <b>bold</b> & more"


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
    return data, r["id"]


def shows(browser, words):
    """Waits (at most 10 s) until the page holds `words`."""
    WebDriverWait(browser, 10).until(lambda d: words in d.page_source)


def shot(browser, name):
    browser.save_screenshot(str(SHOTS / f"{name}.png"))


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
        shot(browser, "chain")

        # The timeline: an SVG plot with the kinds in its legend, and the buckets.
        follow(browser, browser.find_element(By.LINK_TEXT, "timeline"))
        svg = browser.find_element(By.CSS_SELECTOR, "#plot svg")
        legend = svg.get_attribute("innerHTML")
        for kind in ["observed", "extracted", "superseded", "accessed", "forgotten"]:
            assert kind in legend, kind
        assert browser.find_elements(By.CSS_SELECTOR, "#buckets tr")[1:]
        shot(browser, "timeline")

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
        hits = text(browser, "#hits")
        assert "dark-roast" in hits
        shot(browser, "recall")

        # Erasure: the request and its reason, never the forgotten text.
        browser.get(f"{server.base}/ns/{NS}/erasure")
        assert "user asked to forget their employer" in text(browser, "#requests")
        assert "logistics" not in browser.page_source
        shot(browser, "erasure")

        # Markup is text: shown verbatim, no element made of it.
        browser.get(f"{server.base}/ns/{NS}/memory/{markup_id}")
        content = browser.find_element(By.CSS_SELECTOR, "#chain .version .content").text
        assert "<script>alert('x')</script>" in content and "</div></td></table>" in content
        assert not browser.find_elements(By.CSS_SELECTOR, "main script, main b")
        shot(browser, "markup")
        assert cli(data, "log", "--ns", NS).stdout == before, "the inspector wrote to the log"
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
