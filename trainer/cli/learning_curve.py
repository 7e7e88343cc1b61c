"""`learning_curve.png`: mean episode return over env steps, with the min-max band, the
evaluation return when the run evaluates, and the return to reach as a dashed line.

matplotlib is optional (`pip install 'localrl[plot]'`); without it no plot is written. Only its
object API is used (`Figure` + the Agg canvas), never pyplot, so no display or global state is
touched. The file is replaced atomically, so a reader never sees half a PNG.
"""

from __future__ import annotations

import importlib.util
import io
import threading
from typing import Any

from trainer.metrics import (
    EPISODE_RETURN_MAX,
    EPISODE_RETURN_MEAN,
    EPISODE_RETURN_MIN,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
)
from trainer.util.files import replace_file
from trainer.util.imports import OnceImport

PLOT_FILE = "learning_curve.png"


def matplotlib_available() -> bool:
    """Whether matplotlib is installed: found, not imported (the import is `_FIGURE_CLASSES`'s,
    made once, perhaps on its background thread right now)."""
    return importlib.util.find_spec("matplotlib") is not None


def _import_figure_classes() -> tuple[type, type]:
    """matplotlib's `Figure` and Agg canvas, the parts the plot uses (ImportError without
    matplotlib)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    return Figure, FigureCanvasAgg


#: The one import of matplotlib in this process (nothing else in the main job imports it): the
#: background thread's or, when the plot comes first, the plot's; the other waits for it on its
#: lock and never imports matplotlib alongside (see `OnceImport`).
_FIGURE_CLASSES = OnceImport("matplotlib", _import_figure_classes)


def import_in_background() -> threading.Thread:
    """Starts importing matplotlib (0.3-0.5 s, the font list included) in a thread, so that it
    overlaps `build()` and the first iterations instead of delaying the first checkpoint's
    plot, which then finds it loaded or waits for it."""
    return _FIGURE_CLASSES.start()


def _series(results: list[dict], *keys: str) -> tuple[list[float], list[float]]:
    xs: list[float] = []
    ys: list[float] = []
    for result in results:
        node: Any = result
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, (int, float)):
            xs.append(result[NUM_ENV_STEPS_SAMPLED_LIFETIME])
            ys.append(node)
    return xs, ys


def write_learning_curve(
    results: list[dict], path: str, title: str, target_return: float | None = None
) -> bool:
    """Plots `results` (result.json's objects) into `path`; False without matplotlib or data."""
    if not results or not matplotlib_available():
        return False
    Figure, FigureCanvasAgg = _FIGURE_CLASSES.get()
    figure = Figure(figsize=(7, 4), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    steps, mean = _series(results, "env_runners", EPISODE_RETURN_MEAN)
    band_steps, low = _series(results, "env_runners", EPISODE_RETURN_MIN)
    _, high = _series(results, "env_runners", EPISODE_RETURN_MAX)
    if len(low) == len(high) and low:
        axes.fill_between(band_steps, low, high, alpha=0.2, label="min-max")
    axes.plot(steps, mean, marker="." if len(steps) < 30 else None, label="mean return")
    eval_steps, eval_mean = _series(results, "evaluation", "env_runners", EPISODE_RETURN_MEAN)
    if eval_mean:
        axes.plot(eval_steps, eval_mean, marker="o", label="evaluation mean return")
    if target_return is not None:
        axes.axhline(target_return, linestyle="--", color="gray", label=f"{target_return:g}")
    axes.set_xlabel("env steps")
    axes.set_ylabel("episode return")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(loc="best")
    figure.tight_layout()
    image = io.BytesIO()
    figure.savefig(image, format="png")
    replace_file(path, image.getvalue())
    return True
