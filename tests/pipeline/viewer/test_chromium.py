"""The trace page in a real browser: headless Chromium renders the page of a real trace, the four verdicts
are in the rendered DOM and their colours are on the first screen of a 1366x768 laptop window, and nothing
is wider than the window (also for a page full of very long values).

Chromium is Debian's ``chromium`` (``.ci/run`` installs it). Without it the test skips, except when
``TGMS_REQUIRE_CHROMIUM=1`` (CI), where a missing browser fails it. Screenshots are kept under the test's
temporary directory (``--basetemp`` to find them).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.pipeline.viewer.conftest import Traced
from tgms.pipeline.cli.main import main
from tgms.pipeline.viewer import TraceView, render_page
from tgms.pipeline.viewer.style import VERDICT_COLOURS

LAPTOP = (1366, 768)
PROBE = (
    "<script>document.body.setAttribute('data-probe', [document.documentElement.scrollWidth,"
    " document.documentElement.clientWidth, document.documentElement.scrollHeight].join(','))</script>"
)


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("TGMS_REQUIRE_CHROMIUM") == "1":
        pytest.fail("chromium is not installed, and TGMS_REQUIRE_CHROMIUM=1 requires it (see .ci/run)")
    pytest.skip("chromium is not installed (Debian: apt-get install chromium)")


def browse(chromium: str, page: Path, tmp: Path, *args: str, size: tuple[int, int] = LAPTOP) -> str:
    """Run headless Chromium on ``page`` (no network needed: the page has no external resource)."""
    cmd = [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
        "--disable-extensions", "--disable-background-networking", "--disable-dev-shm-usage",
        "--force-device-scale-factor=1", f"--user-data-dir={tmp / 'profile'}",
        f"--window-size={size[0]},{size[1]}", *args, page.as_uri(),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def screenshot(chromium: str, page: Path, png: Path, size: tuple[int, int] = LAPTOP) -> Counter[tuple]:
    """The screenshot's pixel colours (RGB) and their counts."""
    from PIL import Image  # Pillow comes with the dev extras (matplotlib)

    browse(chromium, page, png.parent, f"--screenshot={png}", size=size)
    with Image.open(png) as img:
        assert img.size == size
        data = img.convert("RGB").tobytes()
    return Counter(zip(data[0::3], data[1::3], data[2::3], strict=True))


def rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


def pixels_of(colours: Counter[tuple], hex_colour: str, tol: int = 3) -> int:
    want = rgb(hex_colour)
    return sum(n for c, n in colours.items() if all(abs(a - b) <= tol for a, b in zip(c, want, strict=True)))


class _Verdicts(HTMLParser):
    """The text of every verdict badge of the rendered DOM, and the overflow probe."""

    def __init__(self) -> None:
        super().__init__()
        self.open = 0
        self.found: list[str] = []
        self.probe: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.probe = a.get("data-probe") or self.probe
        if "verdict" in (a.get("class") or "").split():
            self.open, self.found = 1, [*self.found, ""]

    def handle_data(self, data: str) -> None:
        if self.open:
            self.found[-1] += data

    def handle_endtag(self, tag: str) -> None:
        self.open = 0


def rendered(chromium: str, page: Path, tmp: Path, size: tuple[int, int] = LAPTOP) -> _Verdicts:
    probed = tmp / f"probe-{page.name}"
    probed.write_text(page.read_text("utf-8").replace("</body>", PROBE + "</body>"), "utf-8")
    parser = _Verdicts()
    parser.feed(browse(chromium, probed, tmp, "--dump-dom", size=size))
    assert parser.probe, "the probe script did not run"
    return parser


def no_overflow(parser: _Verdicts, width: int) -> None:
    scroll_w, client_w, _ = (int(x) for x in parser.probe.split(","))  # type: ignore[union-attr]
    assert client_w == width and scroll_w <= client_w, f"horizontal overflow: {scroll_w} > {client_w}"


@pytest.fixture(scope="module")
def verified_page(traced: Traced, tmp_path_factory: pytest.TempPathFactory) -> Path:
    page = tmp_path_factory.mktemp("chromium") / "verified.html"
    argv = ["trace", "view", str(traced.run), "--answer", str(traced.answer), "--store", str(traced.store)]
    assert main([*argv, "--out", str(page)]) == 0
    return page


def test_verdicts_render_and_their_colours_are_on_the_first_screen(
    chromium: str, verified_page: Path
) -> None:
    tmp = verified_page.parent
    dom = rendered(chromium, verified_page, tmp)
    assert sorted(dom.found) == sorted(VERDICT_COLOURS)  # one claim per verdict, each as text
    no_overflow(dom, LAPTOP[0])
    colours = screenshot(chromium, verified_page, tmp / "verified.png")
    for verdict, (bg, _) in VERDICT_COLOURS.items():
        assert pixels_of(colours, bg) > 300, f"{verdict}'s colour {bg} is not on the first screen"


def test_unverified_page_shows_no_verdict_colour(chromium: str, traced: Traced, tmp_path: Path) -> None:
    """The control: the same trace without a store has no verdicts, and none of their colours."""
    page = tmp_path / "unverified.html"
    assert main(["trace", "view", str(traced.run), "--answer", str(traced.answer), "--out", str(page)]) == 0
    colours = screenshot(chromium, page, tmp_path / "unverified.png")
    assert all(pixels_of(colours, bg) == 0 for bg, _ in VERDICT_COLOURS.values())
    assert pixels_of(colours, "#ffffff") > 0  # the screenshot is a real page, not an empty image


def test_long_values_do_not_widen_the_page(chromium: str, tmp_path: Path) -> None:
    long = "x" * 3000
    steps = [
        {"id": f"s{i}", "op": "compute" + "_very_long_operator" * 8, "depends_on": [f"s{i - 1}"] if i else [],
         "status": "ok", "rows": 1, "rows_total": 1, "truncated": False, "upstream_truncated": False,
         "result_digest": "a" * 64, "args_digest": "b" * 64}
        for i in range(12)
    ]  # fmt: skip
    fan = [{**s, "id": f"f{i}", "depends_on": ["s0"]} for i, s in enumerate(steps[:8])]
    claim = {"id": "c1", "type": "value", "value": long, "evidence": ["s0"], "from": "s0." + long}
    view = TraceView(
        question="why " * 400 + long,
        source="trace",
        trace={"status": "ok", "steps": steps + fan, "plan": {"steps": [{"id": "s0", "args": {"a": long}}]}},
        answer={"text": long, "claims": [claim]},
        evidence={"s0": {"rows": [{f"k{i}": long for i in range(14)}], "note": long, "vals": [long] * 3}},
    )
    page = tmp_path / "long.html"
    page.write_text(render_page(view), "utf-8")
    no_overflow(rendered(chromium, page, tmp_path), LAPTOP[0])
    narrow = rendered(chromium, page, tmp_path, size=(1024, 700))
    no_overflow(narrow, 1024)


def test_page_has_no_network_resource(verified_page: Path) -> None:
    text = verified_page.read_text("utf-8")
    tags: list[tuple[str, dict[str, str | None]]] = []

    class _All(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            tags.append((tag, dict(attrs)))

    _All().feed(text)
    assert not {"script", "link", "img", "iframe", "object", "embed"} & {t for t, _ in tags}
    assert not [a for _, a in tags if "src" in a or "srcset" in a]
    assert all((a.get("href") or "").startswith("#") for t, a in tags if "href" in a)
    assert "url(" not in re.sub(r"url\(#arr(-t)?\)", "", text) and "@import" not in text
