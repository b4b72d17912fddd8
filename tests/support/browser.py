"""Headless Chromium for the page tests, driven by its own command line (no driver, no Python
package): where it is, what it measures of a laid-out page, and a screenshot.

`.ci/run` installs Debian's `chromium` when it runs as root; `SCORER_CHROMIUM` names another
binary. A measurement adds one script to a copy of the page, which writes what it found
into a `<pre id="probe">` that `--dump-dom` prints; the page itself has no script."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

#: The names Chromium's binary goes by, in the order they are looked for.
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

#: How long one browser run may take, in seconds (it takes about two).
TIMEOUT = 120

#: Measures the page after layout. `beyond`: elements whose right edge passes the window;
#: `foreign`: elements no part of the page makes (a name that became an element would be
#: one); `handlers`: attributes that run code.
PROBE = """<script id="probe-script">
(function () {
  var all = [].slice.call(document.querySelectorAll("*"));
  var mine = function (e) { return e.id === "probe-script"; };
  var right = function (e) { return e.getBoundingClientRect().right; };
  var legend = document.getElementById("legend");
  var W = window.probeWidth || window.innerWidth;  // a phone's width, laid out (`measure`)
  var found = {
    innerWidth: window.innerWidth,
    width: W,
    scrollWidth: document.documentElement.scrollWidth,
    scrollHeight: document.documentElement.scrollHeight,
    beyond: all.filter(function (e) { return right(e) > W + 0.5; })
      .map(function (e) { return e.tagName.toLowerCase() + ": " + e.textContent.slice(0, 40); }),
    outside: all.filter(function (e) { return right(e) > W + 0.5 &&
      !e.closest(".board"); }).map(function (e) {
      return e.tagName.toLowerCase() + ": " + e.textContent.slice(0, 40); }),
    scrolls: [].slice.call(document.querySelectorAll(".board")).map(function (e) {
      return [e.getBoundingClientRect().right, getComputedStyle(e).overflowX]; }),
    teams: [].slice.call(document.querySelectorAll("td.team")).map(function (e) {
      return e.textContent; }),
    tags: all.filter(function (e) { return !mine(e); }).map(function (e) {
      return e.tagName.toLowerCase(); }),
    handlers: all.filter(function (e) { return [].slice.call(e.attributes).some(function (a) {
      return /^on/i.test(a.name) || /^(href|src|srcdoc|action)$/i.test(a.name); }); }).length,
    charts: [].slice.call(document.querySelectorAll("svg")).map(function (e) {
      var box = e.getBoundingClientRect(); return [box.left, box.right, box.width]; }),
    legend: legend ? legend.textContent : null,
    legendShown: legend ? legend.getBoundingClientRect().height > 0 : false
  };
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(found);
  document.body.appendChild(pre);
})();
</script>"""

_RESULT = re.compile(r'<pre id="probe">(.*?)</pre>', re.S)


def find() -> str | None:
    """The Chromium binary to use, or None where there is none."""
    named = os.environ.get("SCORER_CHROMIUM")
    if named:
        return shutil.which(named) or (named if Path(named).is_file() else None)
    return next((path for name in CANDIDATES if (path := shutil.which(name))), None)


#: How every test starts Chromium (with a profile of its own, in a new folder).
FLAGS = (
    "--headless",
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
)


def _run(browser: str, url: str, *args: str) -> str:
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        done = subprocess.run(
            [
                browser,
                *FLAGS,
                f"--user-data-dir={profile}",
                *args,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"{browser} exited with {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def measure(
    browser: str, page: str, width: int, height: int, layout: int | None = None
) -> dict[str, Any]:
    """What the probe finds in `page` laid out in a `width` x `height` window; with `layout`,
    the page is laid out that many pixels wide (a phone's width: headless Chromium makes no
    window narrower than 500 pixels) and measured against it."""
    if layout is not None:
        page = page.replace(
            "</head>", f"<style>html {{ width: {layout}px; }}</style>\n</head>"
        ).replace("</body>", f"<script>window.probeWidth = {layout};</script>\n</body>")
    with tempfile.TemporaryDirectory(prefix="page-") as folder:
        path = Path(folder) / "page.html"
        path.write_text(page.replace("</body>", PROBE + "\n</body>"), encoding="utf-8")
        dom = _run(browser, path.as_uri(), f"--window-size={width},{height}", "--dump-dom")
    found = _RESULT.search(dom)
    if found is None:
        raise RuntimeError(f"the probe found nothing; the browser printed: {dom[:500]!r}")
    data: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return data


def screenshot(browser: str, page: str, png: Path, width: int = 1280) -> None:
    """A picture of the whole page, `width` pixels wide."""
    height = int(measure(browser, page, width, 800)["scrollHeight"])
    with tempfile.TemporaryDirectory(prefix="page-") as folder:
        path = Path(folder) / "page.html"
        path.write_text(page, encoding="utf-8")
        shot = Path(folder) / "shot.png"
        _run(
            browser,
            path.as_uri(),
            f"--window-size={width},{height}",
            "--hide-scrollbars",
            f"--screenshot={shot}",
        )
        shutil.copyfile(shot, png)


def png_size(png: Path) -> tuple[int, int]:
    """(width, height) of a PNG file, from its header."""
    head = png.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{png}: not a PNG file")
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
