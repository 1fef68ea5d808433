#!/usr/bin/env python3
"""Render a gpusqueeze report in headless Chromium and check that it fits the window.

For each width (1280 and 800 px) and colour scheme (light, dark) the page is loaded with a measuring script appended to
a temporary copy (the report itself has no scripts); the check fails when the document is wider than the window, i.e.
something forces a horizontal scroll of the whole page (tables scroll inside their own box and do not count).
With --screenshots DIR it also writes DIR/report-<width>-<scheme>.png of the unmodified page.

--expect-overflow turns the check around (for the test that shows the check can fail): 0 when some rendering overflows.

Exit codes: 0 fits everywhere, 1 overflow found, 2 bad arguments, unreadable page or a measurement that did not run, 77 Chromium not installed or unable to start here (CTest
reports the test as skipped).
"""
import argparse
import html
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

WIDTHS = (1280, 800)
SCHEMES = {"light": "1", "dark": "0"}  # Blink's preferredColorScheme: 0 dark, 1 light

MEASURE = """<script>
const vw = document.documentElement.clientWidth;
const sticksOut = e => e.getBoundingClientRect().right > vw + 1;
const wide = [...document.querySelectorAll('body *')]
  .filter(e => sticksOut(e) && !sticksOut(e.parentElement))  // the outermost element past the window's edge
  .map(e => e.tagName + ' ' + (e.textContent || '').trim().slice(0, 60));
document.body.setAttribute('data-gsq-measure', JSON.stringify({
  viewport: vw, scroll_width: document.documentElement.scrollWidth,
  dark: matchMedia('(prefers-color-scheme: dark)').matches, wide: wide.slice(-5)}));
</script>"""


class BrowserUnavailable(Exception):
    """Chromium is installed but cannot run here (no sandbox support, no /dev/shm, …): the check is skipped."""


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(exe: str, width: int, scheme: str, args: list[str], url: str) -> str:
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           f"--window-size={width},1000", f"--blink-settings=preferredColorScheme={SCHEMES[scheme]}", *args, url]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        raise BrowserUnavailable(f"chromium did not finish in 120 s: {' '.join(cmd[:3])} …") from e
    if done.returncode != 0:
        raise BrowserUnavailable(f"chromium exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return done.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("page", type=pathlib.Path, help="the report's index.html")
    ap.add_argument("--screenshots", type=pathlib.Path, help="folder for the PNG screenshots")
    ap.add_argument("--expect-overflow", action="store_true", help="succeed only if some rendering overflows")
    opts = ap.parse_args()
    exe = chromium()
    if exe is None:
        print("check_report_render: SKIPPED: no chromium on PATH (Debian: apt install chromium)", file=sys.stderr)
        return 77
    try:
        page = opts.page.read_text(encoding="utf-8")
    except OSError as e:
        print(f"check_report_render: {opts.page}: {e}", file=sys.stderr)
        return 2
    if "</body>" not in page:
        print(f"check_report_render: {opts.page}: not a complete HTML page (no </body>)", file=sys.stderr)
        return 2
    try:
        return check(exe, page, opts)
    except BrowserUnavailable as e:
        print(f"check_report_render: SKIPPED: {e}", file=sys.stderr)
        return 77


def check(exe: str, page: str, opts: argparse.Namespace) -> int:
    failures = overflows = 0
    with tempfile.TemporaryDirectory() as tmp:
        probe = pathlib.Path(tmp) / "measure.html"
        probe.write_text(page.replace("</body>", MEASURE + "</body>", 1), encoding="utf-8")
        for width in WIDTHS:
            for scheme in SCHEMES:
                dom = run_chromium(exe, width, scheme, ["--dump-dom"], probe.as_uri())
                m = re.search(r'data-gsq-measure="([^"]*)"', dom)
                if not m:
                    print(f"{width} px {scheme}: the measuring script did not run", file=sys.stderr)
                    failures += 1
                    continue
                r = json.loads(html.unescape(m.group(1)))
                fits = r["scroll_width"] <= r["viewport"]
                if r["dark"] != (scheme == "dark"):
                    print(f"{width} px {scheme}: Chromium did not apply the colour scheme", file=sys.stderr)
                    failures += 1
                print(f"{width} px {scheme}: page {r['scroll_width']} px in a {r['viewport']} px window: "
                      f"{'fits' if fits else 'OVERFLOWS'}" + ("" if fits else f" (widest: {r['wide']})"))
                overflows += 0 if fits else 1
                if opts.screenshots:
                    opts.screenshots.mkdir(parents=True, exist_ok=True)
                    shot = (opts.screenshots / f"report-{width}-{scheme}.png").resolve()
                    run_chromium(exe, width, scheme, [f"--screenshot={shot}"], opts.page.resolve().as_uri())
    if failures:
        return 2
    if opts.expect_overflow:
        return 0 if overflows else 1
    return 1 if overflows else 0


if __name__ == "__main__":
    sys.exit(main())
