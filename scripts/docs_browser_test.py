"""Browser test of the documentation site (``make docs-browser-test``, after ``make docs``).

Serves docs/_build/html on 127.0.0.1 (a free port) and opens, in headless Chromium
(Playwright driving Debian's chromium, as scripts/browser_test.py does):

1. the start page: its title names polymagic, the heading and the navigation (the
   user guide, the techniques, the notebooks) are there;
2. one notebook page (02 scratchpad buffers, rendered from its stored outputs): its
   title, at least one figure whose image has loaded (natural width > 0), the
   report's OK verdict, and no error output (traceback, MISMATCH).

On both: no JavaScript error.  Requests to other hosts (none are reachable offline)
are blocked and only counted.  Screenshots go to ``--out`` (default
``build/docs-browser-test/``).  Exit status: 0 passed, 1 failed, 2 could not set up
(no built site, no Chromium, no Playwright).
"""
from __future__ import annotations

import argparse
import functools
import http.server
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_test import SetupError, announce_installs, ensure_packages, find_chromium  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "docs" / "_build" / "html"
NOTEBOOK = "notebooks/02_scratchpad.html"
WANTED = {"playwright": "playwright>=1.40,<2"}


def log(msg: str) -> None:
    print(f"[docs-browser-test {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the test logs what matters itself
        pass


def serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


class PageWatch:
    """JavaScript errors and blocked outside requests of one page."""

    def __init__(self, page, base: str):
        self.errors: list[str] = []
        self.blocked: list[str] = []
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        page.on("console", lambda m: m.type == "error" and not self._blocked_load(m.text)
                and self.errors.append(f"console error: {m.text}"))
        page.route("**/*", lambda route: self._route(route, base))

    def _route(self, route, base: str) -> None:
        if route.request.url.startswith(base):
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()

    @staticmethod
    def _blocked_load(text: str) -> bool:
        return "net::ERR_FAILED" in text or "Failed to load resource" in text


def check_start_page(page, base: str) -> None:
    page.goto(f"{base}/index.html", wait_until="load")
    title = page.title()
    if "polymagic" not in title:
        raise AssertionError(f"start page title {title!r} does not name polymagic")
    h1 = page.locator("article h1").first.inner_text()
    if "polymagic" not in h1:
        raise AssertionError(f"start page heading {h1!r}")
    nav = page.locator(".sidebar-tree a").all_inner_texts()
    for wanted in ("Getting started", "How to read a report", "Glossary", "Option reference"):
        if not any(wanted in t for t in nav):
            raise AssertionError(f"start page navigation lacks {wanted!r}: {nav}")
    log(f"start page: title {title!r}, {len(nav)} navigation links")


def check_notebook_page(page, base: str) -> None:
    page.goto(f"{base}/{NOTEBOOK}", wait_until="load")
    title = page.title()
    if "polymagic" not in title or "scratchpad" not in title.lower():
        raise AssertionError(f"notebook page title {title!r}")
    from playwright.sync_api import TimeoutError as PwTimeout
    try:
        page.wait_for_function(
            "() => [...document.querySelectorAll('article img')].some("
            "i => i.complete && i.naturalWidth > 0)", timeout=30_000)
    except PwTimeout:
        raise AssertionError("no figure on the notebook page loaded within 30 s (outputs "
                             "missing? make docs executes the notebooks)") from None
    imgs = page.evaluate("() => [...document.querySelectorAll('article img')].map("
                         "i => [i.naturalWidth, i.naturalHeight])")
    broken = [wh for wh in imgs if wh[0] == 0]
    if broken:
        raise AssertionError(f"{len(broken)} of {len(imgs)} images did not load")
    # the cells' outputs (myst-nb's .cell_output), not their source code
    text = "\n".join(page.locator("article .cell_output").all_inner_texts())
    for bad in ("Traceback", "MISMATCH"):
        if bad in text:
            raise AssertionError(f"the notebook page's outputs show {bad}")
    if page.locator("article .output.traceback, article .output.stderr").count():
        raise AssertionError("the notebook page shows an error output")
    if "OK" not in text:
        raise AssertionError("the notebook page's outputs show no OK verdict (outputs missing? "
                             "make docs executes the notebooks)")
    log(f"notebook page: title {title!r}, {len(imgs)} figures loaded")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "docs-browser-test"))
    ap.add_argument("--no-install", action="store_true", help="never install anything")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not (SITE / "index.html").exists() or not (SITE / NOTEBOOK).exists():
        log(f"cannot set up: no built site at {SITE} (run make docs first)")
        return 2
    try:
        announce_installs(not args.no_install, WANTED)
        ensure_packages(not args.no_install, WANTED)
        chromium = find_chromium(not args.no_install)
    except SetupError as e:
        log(f"cannot set up: {e}")
        return 2
    from playwright.sync_api import Error as PwError
    from playwright.sync_api import sync_playwright
    server, base = serve(SITE)
    t0 = time.monotonic()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=chromium, headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
            try:
                page = browser.new_page(viewport={"width": 1300, "height": 900})
                page.set_default_timeout(60_000)
                watch = PageWatch(page, base)
                for name, check in (("start", check_start_page),
                                    ("notebook", check_notebook_page)):
                    try:
                        check(page, base)
                    finally:
                        page.screenshot(path=str(out / f"{name}.png"), full_page=False)
                if watch.errors:
                    raise AssertionError("; ".join(watch.errors))
                if watch.blocked:
                    log(f"blocked {len(watch.blocked)} requests to other hosts "
                        f"(offline), e.g. {watch.blocked[0]}")
            finally:
                browser.close()
    except (AssertionError, PwError) as e:
        log(f"FAILED after {time.monotonic() - t0:.0f} s: {type(e).__name__}: {e}")
        return 1
    finally:
        server.shutdown()
    log(f"passed in {time.monotonic() - t0:.0f} s; screenshots in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
