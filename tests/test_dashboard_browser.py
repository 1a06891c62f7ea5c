"""The dashboard in a real browser: Debian's headless Chromium driven by Playwright
(`executable_path` to the system's browser: nothing is downloaded), against `loremap dashboard`
run as a user runs it, over a real project.

Every page is screenshotted into the test's tmp folder (the path is printed), every request
the page makes is intercepted and must go to loopback (anything else is aborted and fails the
test), and a note whose title holds markup must show as text with no script run.
"""

from __future__ import annotations

import random
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from conftest import git

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
try:
    from playwright.sync_api import Browser, Page, Route, sync_playwright
except ImportError:  # the [test] extra brings it
    PLAYWRIGHT = False
else:
    PLAYWRIGHT = True

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or not PLAYWRIGHT,
    reason="the dashboard's browser tests need Debian's chromium (apt-get install chromium) "
           "and playwright (the [test] extra)")

EVIL = "<img src=x onerror=\"window.pwned=1\"><script>window.pwned=2</script>"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
GOTCHA = "gotcha-login-tokens-expire-at-midnight-utc"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM is not None
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run", "--disable-sync"])
        try:
            yield launched
        finally:
            launched.close()


class Dashboard:
    """`loremap dashboard --port 0` in its own process, a page on it, and every URL the page
    asked for (the ones that were not loopback were aborted)."""

    def __init__(self, root: Path, browser: Browser, *options: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "loremap", "dashboard", "--port", "0", *options], cwd=root,
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        assert match, line + self.process.stderr.read()
        self.url = match.group(1)
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.context = browser.new_context(viewport={"width": 1280, "height": 860})
        self.page = self.context.new_page()
        self.page.add_init_script(WATCH_BOX)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("dialog", lambda dialog: self.errors.append(f"dialog {dialog.message}"))
        self.page.route("**/*", self._route)

    def _route(self, route: Route) -> None:
        url = route.request.url
        self.requests.append(url)
        if urlparse(url).hostname in LOOPBACK:
            route.continue_()
        else:
            route.abort()

    def show(self, name: str) -> Page:
        """Open page `name` (graph, search, ...) and wait until it has loaded."""
        self.page.goto(f"{self.url}#{name}")
        self.page.wait_for_selector(f"body[data-loaded='{name}']")
        return self.page

    def close(self) -> None:
        self.context.close()
        self.process.send_signal(signal.SIGTERM)
        try:
            assert self.process.wait(timeout=60) == 0
        finally:
            assert self.process.stderr is not None
            self.process.stderr.close()

    def check(self) -> None:
        """Nothing left loopback, no script of the data ran, no error on the page."""
        outside = [u for u in self.requests if urlparse(u).hostname not in LOOPBACK]
        assert self.requests and not outside, outside
        assert self.page.evaluate("window.pwned") is None
        assert not self.errors, self.errors


@pytest.fixture
def dashboard(browser: Browser) -> Iterator[Callable[[Path], Dashboard]]:
    opened: list[Dashboard] = []

    def start(root: Path, *options: str) -> Dashboard:
        opened.append(Dashboard(root, browser, *options))
        return opened[-1]

    yield start
    for board in opened:
        board.close()


def shot(page: Page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"dashboard-{name}.png"
    page.screenshot(path=str(path))
    print(f"screenshot of the {name} page: {path}")
    return path


@pytest.fixture
def lore(project: Path, cli: Callable[..., Any]) -> Path:
    for argv in (
        ["-t", "gotcha", "--title", "Login tokens expire at midnight UTC", "-m",
         "The refresh runs before the expiry check.", "--file", "src/auth/login.ts"],
        ["-t", "decision", "--title", "Keep login stateless", "-m", "No session store.",
         "--link", f"relates:{GOTCHA}"],
        ["-t", "concept", "--title", EVIL, "-m", "Markup in a title is only text."],
    ):
        done = cli("remember", *argv)
        assert done.code == 0, done.err
    return project


# Where cytoscape believes its box is, read the moment a page has loaded (before any timer of
# its own could correct it): text set above the graph after it is drawn moves the box, and a
# click then lands where the canvas was. A small node is missed by a line of text's height.
WATCH_BOX = """
new MutationObserver(() => {
  const cy = window.loremapDashboard && window.loremapDashboard.cy;
  if (document.body.dataset.loaded !== 'graph' || !cy || window.boxOffBy !== undefined) return;
  const box = document.getElementById('cy');
  const believed = cy.renderer().findContainerClientCoords();
  window.boxOffBy = Math.abs(believed[1] - box.getBoundingClientRect().top - box.clientTop)
    + Math.abs(believed[0] - box.getBoundingClientRect().left - box.clientLeft);
}).observe(document, {attributes: true, subtree: true, attributeFilter: ['data-loaded']});
"""


def click_node(page: Page, node_id: str) -> None:
    """Click a node where the canvas draws it."""
    assert page.evaluate("window.boxOffBy") == 0, "cytoscape's idea of its box is stale"
    box = page.locator("#cy").bounding_box()
    assert box is not None
    at = page.evaluate("(id) => window.loremapDashboard.cy.getElementById(id).renderedPosition()",
                       node_id)
    page.mouse.click(box["x"] + at["x"], box["y"] + at["y"])


def test_the_graph_renders_and_a_click_opens_a_note(lore: Path, dashboard: Any,
                                                    tmp_path: Path) -> None:
    board = dashboard(lore)
    page = board.show("graph")
    page.wait_for_selector("body[data-graph='ready']")
    drawn = set(page.evaluate("window.loremapDashboard.cy.nodes().map(n => n.id())"))
    assert {"src/auth/", "src/auth/login.ts", GOTCHA, "decision-keep-login-stateless"} <= drawn
    assert "3 of 3 notes" in (page.text_content("#graph-note") or "")
    shot(page, tmp_path, "graph")
    click_node(page, GOTCHA)
    page.wait_for_selector(f"#panel-body[data-id='{GOTCHA}']")
    assert "The refresh runs before the expiry check." in (
        page.text_content("#panel-body pre") or "")
    assert page.evaluate("window.loremapDashboard.cy.$(':selected').map(n => n.id())") == [
        GOTCHA]
    shot(page, tmp_path, "graph-panel")
    board.check()


def test_with_writes_a_click_forgets_a_note(lore: Path, dashboard: Any, tmp_path: Path
                                           ) -> None:
    board = dashboard(lore, "--writes")
    page = board.show("search")
    page.fill("#q", "keep login stateless")
    page.click("button[type=submit]")
    page.wait_for_selector("body[data-searched]")
    page.locator("#results .item[data-id='decision-keep-login-stateless'] a.node").first.click()
    page.wait_for_selector("#panel-body[data-id='decision-keep-login-stateless'] #forget")
    page.fill("#forget-reason", "sessions are back")
    page.click("#forget")
    page.wait_for_selector("#write-said:has-text('archived decision-keep-login-stateless')")
    assert "archived" in (page.text_content("#panel-body p.muted") or "")
    assert page.locator("#forget").count() == 0  # nothing more to forget
    note = lore / ".loremap" / "notes" / "decision-keep-login-stateless.md"
    assert "status: archived" in note.read_text(encoding="utf-8")
    shot(page, tmp_path, "forgotten")
    board.check()


def test_without_writes_the_page_offers_no_write(lore: Path, dashboard: Any) -> None:
    board = dashboard(lore)
    page = board.show("graph")
    page.wait_for_selector("body[data-graph='ready']")
    click_node(page, GOTCHA)
    page.wait_for_selector(f"#panel-body[data-id='{GOTCHA}']")
    assert page.locator("#forget, #outcome-success").count() == 0
    board.check()


def test_a_title_holding_markup_shows_as_text_and_runs_nothing(lore: Path, dashboard: Any,
                                                               tmp_path: Path) -> None:
    board = dashboard(lore)
    page = board.show("graph")
    page.wait_for_selector("body[data-graph='ready']")
    evil = page.evaluate("(t) => window.loremapDashboard.cy.nodes().filter(n => "
                         "n.data('label') === t).map(n => n.id())", EVIL)
    assert len(evil) == 1
    click_node(page, evil[0])
    page.wait_for_selector(f"#panel-body[data-id='{evil[0]}']")
    assert page.text_content("#panel-body h2") == EVIL  # the markup, as text
    assert page.locator("#panel-body img, #panel-body script").count() == 0
    board.show("search")
    page.fill("#q", "markup in a title")
    page.click("button[type=submit]")
    page.wait_for_selector("body[data-searched]")
    assert EVIL in (page.text_content("#results") or "")
    assert page.locator("#results img, #results script").count() == 0
    shot(page, tmp_path, "search-markup")
    board.check()


def test_a_search_shows_items_with_their_why(lore: Path, dashboard: Any,
                                             tmp_path: Path) -> None:
    board = dashboard(lore)
    page = board.show("search")
    page.fill("#q", "when do login tokens expire")
    page.click("button[type=submit]")
    page.wait_for_selector("body[data-searched]")
    first = page.locator("#results .item").first
    assert first.get_attribute("data-id") == GOTCHA
    text = first.text_content() or ""
    assert "why: " in text and "tokens" in text and re.search(r"(bm25|entities|notes) #\d", text)
    shot(page, tmp_path, "search")
    first.locator("a.node").first.click()
    page.wait_for_selector(f"#panel-body[data-id='{GOTCHA}']")
    board.check()


def test_a_stale_note_appears_in_health_after_its_file_changes(lore: Path, dashboard: Any,
                                                               tmp_path: Path) -> None:
    board = dashboard(lore)
    page = board.show("health")
    assert "Stale notes (0)" in (page.text_content("#health") or "")
    (lore / "src" / "auth" / "login.ts").write_text("export function login(at) {}\n",
                                                    encoding="utf-8")
    git(lore, "commit", "-qam", "login takes a time")
    page = board.show("timeline")  # away and back: health is read again when shown
    shot(page, tmp_path, "timeline")
    page = board.show("health")
    stale = page.locator(f"#health li[data-id='{GOTCHA}']")
    assert "src/auth/login.ts changed since this note (1 commit)" in (stale.text_content() or "")
    assert "Stale notes (1)" in (page.text_content("#health") or "")
    shot(page, tmp_path, "health")
    board.check()


def test_the_tokens_page_shows_the_x_ray_in_a_sandbox(lore: Path, dashboard: Any,
                                                      tmp_path: Path, claude: Path) -> None:
    board = dashboard(lore)
    page = board.show("tokens")
    assert page.get_attribute("#tokens-frame", "sandbox") == ""
    frame = page.frame_locator("#tokens-frame")
    assert "Token X-ray" in (frame.locator("h1").text_content() or "")
    shot(page, tmp_path, "tokens")
    board.check()


def test_an_empty_vault_says_what_to_do(project: Path, dashboard: Any, tmp_path: Path) -> None:
    board = dashboard(project)
    page = board.show("graph")
    empty = page.locator("#empty")
    assert empty.is_visible() and "loremap remember" in (empty.text_content() or "")
    shot(page, tmp_path, "empty")
    board.check()


def generated(count: int) -> dict[str, list[dict[str, Any]]]:
    """A graph of `count` nodes shaped like a project's: modules, files ranked by a skewed
    PageRank, notes about files; three edges a node."""
    rng = random.Random(count)
    modules = [{"id": f"m{i}/", "kind": "module", "label": f"m{i}/", "type": "",
                "status": "active", "modules": [f"m{i}/"], "rank": rng.random()}
               for i in range(max(1, count // 40))]
    notes = [{"id": f"note-{i}", "kind": "note", "label": f"note {i}", "type": "decision",
              "status": "active", "modules": [], "rank": 0.0} for i in range(count // 20)]
    files = [{"id": f"m{i % len(modules)}/f{i}.py", "kind": "file", "label": f"f{i}.py",
              "type": "", "status": "active", "modules": [f"m{i % len(modules)}/"],
              "rank": rng.random() ** 3} for i in range(count - len(modules) - len(notes))]
    ids = [f["id"] for f in files]
    edges = [{"src": f["modules"][0], "dst": f["id"], "rel": "in"} for f in files]
    edges += [{"src": rng.choice(ids), "dst": rng.choice(ids), "rel": "imports"}
              for _ in range(2 * count)]
    edges += [{"src": n["id"], "dst": rng.choice(ids), "rel": "about"} for n in notes]
    return {"nodes": [*modules, *files, *notes], "edges": edges}


def test_a_huge_graph_is_drawn_as_the_top_of_its_ranking(project: Path, dashboard: Any,
                                                         tmp_path: Path) -> None:
    board = dashboard(project)
    page = board.show("graph")
    page.wait_for_selector("body[data-graph='ready']")
    limit = page.evaluate("window.loremapDashboard.LIMIT")
    data = generated(limit * 2)
    drawn = page.evaluate("(d) => window.loremapDashboard.renderGraph(d)", data)
    assert drawn["nodes"] == limit and drawn["dropped"] == limit
    kept = set(page.evaluate("window.loremapDashboard.cy.nodes().map(n => n.id())"))
    modules = {n["id"] for n in data["nodes"] if n["kind"] == "module"}
    assert modules <= kept  # every module stays; the least central files go
    files = sorted((n for n in data["nodes"] if n["kind"] == "file"), key=lambda n: -n["rank"])
    assert files[0]["id"] in kept and files[-1]["id"] not in kept
    shot(page, tmp_path, "huge-graph")
    board.check()
