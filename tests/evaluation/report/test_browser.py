"""The report pages open in a real browser: no console errors, and every chart draws something.

The pages are checked as a reader sees them, in headless Chromium (or Firefox where Chromium is
missing), on small real Meta-World runs: report.html, comparison.html and a training curve
made of two real runs laid out as lerobot-train's in-loop evaluations. XML checks elsewhere
say the markup is well formed; only a browser says that the SVG is drawn.

Where each chart is: a copy of the page with a script appended writes the charts' boxes into
the DOM, which `--dump-dom` prints; the screenshot is then taken of the page itself (no
script) at the same width and tall enough to hold the whole page, and each box must hold
coloured pixels (the series colours; gridlines and text are grey). Nothing here waits on a
timer: both runs return when the page has loaded.
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from lerobot.scripts import lerobot_eval, lerobot_eval_report

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "firefox-esr", "firefox")
WIDTH = 1200
MIN_COLOURED_PIXELS = 30
RUN_FLAGS = [
    "--env.type=metaworld",
    "--env.task=reach-v3",
    "--env.obs_type=state",
    "--eval.n_episodes=2",
    "--eval.max_episodes_rendered=0",
    "--log_level=WARNING",
]
EXPERT = ["--policy.type=metaworld_expert", "--env.episode_length=100", *RUN_FLAGS]
RANDOM = ["--policy.type=random", "--env.episode_length=10", *RUN_FLAGS]
BOXES_SCRIPT = """<script>
document.body.setAttribute("data-boxes", JSON.stringify({
  height: document.documentElement.scrollHeight,
  charts: Array.from(document.querySelectorAll("svg.chart")).map(function (svg) {
    var r = svg.getBoundingClientRect();
    return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height];
  })
}));
</script>"""


def find_browser() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


BROWSER = find_browser()
pytestmark = [
    pytest.mark.skipif(
        BROWSER is None,
        reason="no chromium or firefox-esr installed (apt-get install -y chromium; .ci/run installs it)",
    ),
    pytest.mark.slow,
    pytest.mark.xdist_group("report_browser"),  # one worker builds the runs the module shares
]


def is_firefox() -> bool:
    return "firefox" in Path(BROWSER).name


def browse(url: str, *flags: str, tmp: Path) -> subprocess.CompletedProcess:
    """One headless browser run; a fresh profile each time so no state carries over."""
    profile = tmp / f"profile{len(list(tmp.glob('profile*')))}"
    if is_firefox():
        command = [BROWSER, "--headless", "--profile", str(profile), *flags, url]
    else:
        command = [
            BROWSER,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            *flags,
            url,
        ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def console_errors(stderr: str) -> list[str]:
    """Chromium logs every console message as `INFO:CONSOLE...`; the pages have no script, so
    any console message (an error, a blocked resource, a parse failure) is a fault."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


def chart_boxes(page: Path, tmp: Path) -> dict:
    probe = page.with_name(f"probe_{page.name}")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", BOXES_SCRIPT + "</body>"))
    dom = browse(probe.as_uri(), f"--window-size={WIDTH},1000", "--dump-dom", tmp=tmp).stdout
    probe.unlink()
    found = re.search(r'data-boxes="([^"]*)"', dom)
    assert found, f"the probe script did not run in {page}"
    return json.loads(found.group(1).replace("&quot;", '"'))


def screenshot(page: Path, height: int, tmp: Path) -> tuple[Image.Image, list[str]]:
    png = tmp / f"{page.stem}.png"
    flags = (
        ["--screenshot", str(png), f"--window-size={WIDTH},{height}"]
        if is_firefox()
        else [f"--screenshot={png}", f"--window-size={WIDTH},{height}"]
    )
    result = browse(page.as_uri(), *flags, tmp=tmp)
    assert png.is_file(), f"no screenshot of {page}: {result.stderr[-2000:]}"
    return Image.open(png).convert("RGB"), console_errors(result.stderr)


def coloured_pixels(image: Image.Image, box: list[float]) -> int:
    """Pixels in the box whose channels differ by more than 60: the series colours, not the
    white background nor the grey grid and labels."""
    left, top, width, height = (int(v) for v in box)
    region = image.crop((left, top, left + width, top + height))
    pixels = np.asarray(region, dtype=np.int16)
    return int(((pixels.max(axis=2) - pixels.min(axis=2)) > 60).sum())


def assert_opens_with_every_chart_drawn(page: Path, n_charts: int, tmp: Path) -> None:
    boxes = chart_boxes(page, tmp)
    assert len(boxes["charts"]) == n_charts, boxes
    image, errors = screenshot(page, int(boxes["height"]) + 50, tmp)
    assert errors == [], f"{page.name}: console errors {errors}"
    for i, box in enumerate(boxes["charts"]):
        assert box[2] > 100 and box[3] > 50, f"{page.name}: chart {i} is not laid out: {box}"
        assert coloured_pixels(image, box) >= MIN_COLOURED_PIXELS, f"{page.name}: chart {i} is blank"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A real expert run and a real random run (same seeds), their comparison, and a training
    output dir holding them as the in-loop evaluations at steps 10 and 20."""
    root = tmp_path_factory.mktemp("browser")
    for name, flags in (("expert", EXPERT), ("random", RANDOM)):
        assert lerobot_eval.main([*flags, f"--output_dir={root / name}", f"--job_name={name}"]) == 0
    compare = root / "compare"
    assert (
        lerobot_eval_report.main([str(root / "expert"), str(root / "random"), f"--output_dir={compare}"]) == 0
    )
    train = root / "train"
    shutil.copytree(root / "random", train / "eval" / "step_10")
    shutil.copytree(root / "expert", train / "eval" / "step_20")
    assert lerobot_eval_report.main([str(train)]) == 0
    return {"expert": root / "expert", "compare": compare, "train": train}


def test_the_console_check_catches_a_script_error(tmp_path):
    """The check below is only as good as its detector: a page that throws must be caught."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>notDefined();</script></body></html>")
    if is_firefox():
        pytest.skip("Firefox headless does not print console messages to stderr")
    result = browse(page.as_uri(), "--dump-dom", tmp=tmp_path)
    assert console_errors(result.stderr), result.stderr[-2000:]


def test_report_opens_with_its_success_and_time_to_success_charts(runs, tmp_path):
    assert_opens_with_every_chart_drawn(runs["expert"] / "report.html", n_charts=2, tmp=tmp_path)


def test_comparison_opens_with_its_success_and_time_to_success_charts(runs, tmp_path):
    assert_opens_with_every_chart_drawn(runs["compare"] / "comparison.html", n_charts=2, tmp=tmp_path)


def test_training_curve_opens_with_its_chart(runs, tmp_path):
    assert_opens_with_every_chart_drawn(runs["train"] / "training_curve.html", n_charts=1, tmp=tmp_path)
