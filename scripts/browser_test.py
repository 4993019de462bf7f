"""Browser test: JupyterLab on localhost driven by headless Chromium (``make browser-test``).

1. Installs what it needs when missing: ``playwright`` and ``jupyterlab`` from PyPI
   into the running Python (Playwright's own browser download is never used), and
   Debian's ``chromium`` with apt-get (as root).
2. Starts JupyterLab on 127.0.0.1 (a free port, a random token, a temporary root
   holding copies of the notebooks, its own settings: windowing off so every cell
   is in the page, no restored workspace).
3. Opens ``01_getting_started.ipynb``, runs all cells from the *Run* menu and checks
   the outputs: every check OK, no MISMATCH, no traceback.
4. Opens ``06_tile_explorer.ipynb``, runs all cells, then moves the first tile-size
   slider of the first explorer with the keyboard to 16 (to 32 when it starts at 16:
   the default tile depends on the grid-filling rule) and waits until the explorer
   has regenerated: the CUDA shown and the summary must change.

Every wait is bounded (``--timeout``, per step).  Screenshots go to ``--out``
(default ``build/browser-test/``) on success and on failure, with the server's log.
Exit status: 0 passed, 1 failed, 2 could not set up (no Chromium, no packages).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ("01_getting_started.ipynb", "06_tile_explorer.ipynb")


class SetupError(Exception):
    pass


def log(msg: str) -> None:
    print(f"[browser-test {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- setup ---------------------------------------------------------------------------

#: what the test needs from PyPI (module: requirement)
PACKAGES = {"playwright": "playwright>=1.40,<2", "jupyterlab": "jupyterlab>=4.1,<5"}


def announce_installs(install: bool, wanted: dict[str, str] = PACKAGES) -> None:
    """Say, before installing anything, what is missing and what will be installed."""
    missing = [wanted[m] for m in wanted if importlib.util.find_spec(m) is None]
    chromium = any(shutil.which(n) for n in ("chromium", "chromium-browser"))
    if not missing and chromium:
        log("set-up: nothing to install (Python packages and Chromium present)")
        return
    what = []
    if missing:
        what.append(f"{', '.join(missing)} from PyPI into {sys.prefix} (pip)")
    if not chromium:
        what.append("Debian's chromium package with apt-get (as root; it pulls in about "
                    "130 system packages, some 300 MB)")
    log(("set-up: will install " if install else "set-up: missing (--no-install): ")
        + "; and ".join(what))


def ensure_packages(install: bool, wanted: dict[str, str] = PACKAGES) -> None:
    missing = [wanted[m] for m in wanted if importlib.util.find_spec(m) is None]
    if not missing:
        return
    if not install:
        raise SetupError(f"missing Python packages: {', '.join(missing)} (pip install them)")
    log(f"installing {', '.join(missing)} with pip")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--progress-bar", "off",
                        *missing],
                       timeout=900)
    if r.returncode != 0:
        raise SetupError(f"pip install {' '.join(missing)} failed ({r.returncode})")
    importlib.invalidate_caches()


def find_chromium(install: bool) -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if not install:
        raise SetupError("no chromium on PATH (apt-get install chromium)")
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SetupError("no chromium on PATH, and apt-get cannot install it here")
    log("installing Debian's chromium with apt-get (about 130 system packages)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], timeout=600, env=env)
    r = subprocess.run(["apt-get", "install", "-y", "chromium"], timeout=1200, env=env)
    path = shutil.which("chromium")
    if r.returncode != 0 or not path:
        raise SetupError("apt-get install chromium failed")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A JupyterLab server of our own, stopped (its process group) on exit."""

    def __init__(self, work: Path, out: Path, timeout: float):
        self.work, self.out, self.timeout = work, out, timeout
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.proc: subprocess.Popen | None = None
        self.logfile = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "Lab":
        root = self.work / "notebooks"
        root.mkdir(parents=True)
        for name in NOTEBOOKS:
            shutil.copy(ROOT / "notebooks" / name, root / name)
        settings = self.work / "settings" / "@jupyterlab" / "notebook-extension"
        settings.mkdir(parents=True)
        (settings / "tracker.jupyterlab-settings").write_text(json.dumps(
            {"windowingMode": "none"}))
        apputils = self.work / "settings" / "@jupyterlab" / "apputils-extension"
        apputils.mkdir(parents=True)
        (apputils / "notification.jupyterlab-settings").write_text(json.dumps(
            {"fetchNews": "false", "checkForUpdates": False}))
        env = dict(os.environ,
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   JUPYTERLAB_SETTINGS_DIR=str(self.work / "settings"),
                   JUPYTERLAB_WORKSPACES_DIR=str(self.work / "workspaces"),
                   JUPYTER_RUNTIME_DIR=str(self.work / "runtime"),
                   JUPYTER_CONFIG_DIR=str(self.work / "config"))
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
               f"--port={self.port}", f"--IdentityProvider.token={self.token}",
               f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False",
               "--LabApp.news_url=", "--ServerApp.port_retries=0", "--allow-root"]
        self.logfile = open(self.out / "jupyterlab.log", "w")
        log(f"starting JupyterLab on {self.base}")
        self.proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=self.logfile,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SetupError(f"JupyterLab exited ({self.proc.returncode}); see "
                                 f"{self.out / 'jupyterlab.log'}")
            try:
                with urllib.request.urlopen(f"{self.base}/api/status?token={self.token}",
                                            timeout=5) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        raise SetupError(f"JupyterLab did not answer within {self.timeout:.0f} s")

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 15)
                self.proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, 9)
                except ProcessLookupError:
                    pass
        if self.logfile:
            self.logfile.close()


# ---- the page -------------------------------------------------------------------------

def open_notebook(page, lab: Lab, name: str, timeout_ms: int) -> None:
    log(f"opening {name}")
    # ?reset: a fresh workspace, so this notebook is the only panel in the page
    page.goto(f"{lab.base}/lab/tree/{name}?reset&token={lab.token}", timeout=timeout_ms)
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(
        timeout=timeout_ms)
    # JupyterLab may ask which kernel to start: take the proposed one (python3)
    deadline = time.monotonic() + min(timeout_ms / 1000, 60)
    while time.monotonic() < deadline:
        dialog = page.locator(".jp-Dialog")
        if dialog.count() and dialog.first.is_visible():
            log("kernel dialog: choosing the proposed kernel")
            dialog.locator(".jp-Dialog-button.jp-mod-accept").first.click()
            break
        if page.evaluate("""() => {
                const ind = document.querySelector(
                    '.jp-NotebookPanel .jp-Notebook-ExecutionIndicator');
                return !!ind && ind.getAttribute('data-status') === 'idle'; }"""):
            break
        time.sleep(0.5)
    wait_idle(page, timeout_ms)


def wait_idle(page, timeout_ms: int) -> None:
    """The notebook's kernel is connected and idle: the toolbar's execution indicator
    and the status bar ('Python 3 (ipykernel) | Idle') both say so."""
    page.wait_for_function(
        """() => {
            const ind = document.querySelector(
                '.jp-NotebookPanel .jp-Notebook-ExecutionIndicator');
            const bar = document.querySelector('#jp-main-statusbar');
            return !!ind && ind.getAttribute('data-status') === 'idle' &&
                   !!bar && /\|\s*Idle/.test(bar.innerText);
        }""", timeout=timeout_ms, polling=250)


_PROMPTS = """() => {
    const nb = document.querySelector('.jp-NotebookPanel');
    return nb ? [...nb.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                    .map(p => p.textContent.trim()) : [];
}"""


def run_all(page, timeout_ms: int) -> None:
    """Run > Run All Cells (again if the kernel did not start on it within 15 s), then
    wait until every code cell shows an execution count and the kernel is idle."""
    for attempt in range(3):
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        try:
            page.wait_for_function(
                f"() => ({_PROMPTS})().some(t => t !== '[ ]:')", timeout=15_000,
                polling=250)
            break
        except Exception:  # noqa: BLE001 - not started: the page was still loading
            log(f"Run All Cells did not start (attempt {attempt + 1})")
            page.keyboard.press("Escape")
            wait_idle(page, timeout_ms)
    else:
        raise AssertionError("Run All Cells never started the kernel")
    page.wait_for_function(
        f"() => {{ const ps = ({_PROMPTS})(); "
        "return ps.length > 0 && ps.every(t => /^\\[\\d+\\]/.test(t)); }",
        timeout=timeout_ms, polling=500)
    wait_idle(page, timeout_ms)


def check_outputs(page, name: str) -> None:
    texts = page.locator(
        ".jp-NotebookPanel .jp-OutputArea-output").all_inner_texts()
    text = "\n".join(texts)
    bad = [w for w in ("MISMATCH", "Traceback", "\nUsageError") if w in "\n" + text]
    if bad:
        raise AssertionError(f"{name}: outputs contain {', '.join(bad)}")
    if "OK" not in text:
        raise AssertionError(f"{name}: no OK verdict in the outputs")
    log(f"{name}: {len(texts)} outputs, all checks OK")


def move_tile_slider(page, timeout_ms: int) -> tuple[str, str]:
    """Move the first explorer's first tile slider with the keyboard to 16 (to 32 when
    it shows 16 already); return (summary before, summary after) once the explorer
    has regenerated at the new size."""
    ex = page.locator(".polymagic-explorer").first
    ex.scroll_into_view_if_needed(timeout=timeout_ms)
    slider = ex.locator(".widget-slider").first
    readout = slider.locator(".widget-readout")
    before_value = readout.inner_text().strip()
    if not before_value.isdigit():
        raise AssertionError(f"the first tile slider shows {before_value!r}, not a number")
    tabs = ex.locator(".widget-tab-contents, .jupyter-widget-tab-contents").first
    cuda_before = tabs.inner_text()
    status = ex.locator(".widget-html-content", has_text="regenerated").first
    summary_before = status.inner_text()
    handle = slider.locator(".noUi-handle").first
    handle.focus()
    start = int(before_value)
    target = 32 if start == 16 else 16
    key = "ArrowRight" if target > start else "ArrowLeft"
    for _ in range(abs(target - start)):
        handle.press(key)
    log(f"moved the slider from {start} to {readout.inner_text().strip()}")
    # intermediate values may regenerate on the way (slow key presses): wait for the target
    page.wait_for_function(
        """([el, before, tile]) => {
            const t = el.innerText;
            return /regenerated/.test(t) && t !== before && t.includes(`(tile ${tile},`);
        }""", arg=[status.element_handle(), summary_before, target], timeout=timeout_ms,
        polling=250)
    summary_after = status.inner_text()
    if tabs.inner_text() == cuda_before:
        raise AssertionError("the CUDA tab did not change after moving the slider")
    if f"tile {target}" not in summary_after:
        raise AssertionError(f"the summary does not show the new tile size: {summary_after}")
    return summary_before, summary_after


def _failure_screenshot(page, out: Path) -> None:
    if page is None:
        return
    try:
        page.screenshot(path=str(out / "failure.png"), full_page=True)
        log(f"screenshot of the failure: {out / 'failure.png'}")
    except Exception as e:  # noqa: BLE001 - the failure itself is what matters
        log(f"no failure screenshot: {e}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "browser-test"))
    ap.add_argument("--timeout", type=float, default=240, help="seconds per step")
    ap.add_argument("--no-install", action="store_true", help="never install anything")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    try:
        announce_installs(not args.no_install)
        ensure_packages(not args.no_install)
        chromium = find_chromium(not args.no_install)
    except (SetupError, subprocess.TimeoutExpired) as e:
        log(f"cannot set up: {e}")
        return 2
    from playwright.sync_api import Error as PwError
    from playwright.sync_api import sync_playwright
    ms = int(args.timeout * 1000)
    page = None
    with tempfile.TemporaryDirectory(prefix="pm-browser-") as tmp:
        try:
            with Lab(Path(tmp), out, args.timeout) as lab, sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path=chromium, headless=True,
                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
                try:
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    page.set_default_timeout(ms)
                    open_notebook(page, lab, NOTEBOOKS[0], ms)
                    run_all(page, ms)
                    page.screenshot(path=str(out / "01_getting_started.png"), full_page=True)
                    check_outputs(page, NOTEBOOKS[0])
                    open_notebook(page, lab, NOTEBOOKS[1], ms)
                    run_all(page, ms)
                    check_outputs(page, NOTEBOOKS[1])
                    page.locator(".polymagic-explorer").first.scroll_into_view_if_needed()
                    page.screenshot(path=str(out / "06_before.png"))
                    before, after = move_tile_slider(page, ms)
                    page.screenshot(path=str(out / "06_after.png"))
                    log(f"before: {before.strip()[:160]}")
                    log(f"after:  {after.strip()[:160]}")
                except Exception:
                    _failure_screenshot(page, out)
                    raise
                finally:
                    browser.close()
        except (AssertionError, PwError, SetupError, subprocess.TimeoutExpired) as e:
            log(f"FAILED after {time.monotonic() - t0:.0f} s: {type(e).__name__}: {e}")
            return 1
    log(f"passed in {time.monotonic() - t0:.0f} s; screenshots in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
