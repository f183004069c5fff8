"""What the experiments' table scripts share about paired tests: Holm's adjustment as the run's
own tables make it (`citeforge holm`, rewards::holm_adjusted) and the Markdown cells of a mean
with its interval and of a paired difference with its p-value. Standard library only; a script in
a folder below experiments/ imports it after putting experiments/ on its path."""
import json
import subprocess
from pathlib import Path


def holm(ps):
    """Holm-adjusted p-values by `citeforge holm`, the rule the run's own tables use."""
    if not ps:
        return []
    citeforge = Path(__file__).resolve().parents[1] / "build" / "citeforge"
    result = subprocess.run([str(citeforge), "holm", *map(repr, ps)], check=True,
                            capture_output=True, text=True)
    return json.loads(result.stdout)["p_holm"]


def interval_cell(m):
    """A mean and its 95% interval in percent: "46.8 [38.0, 55.4]"."""
    return f"{100 * m['mean']:.1f} [{100 * m['ci_low']:.1f}, {100 * m['ci_high']:.1f}]"


def paired_cell(test, p):
    """A paired difference in points, its interval and its (adjusted) p; "-" for no test."""
    if test is None:
        return "-"
    d, lo, hi = (100 * test[k] for k in ("difference", "ci_low", "ci_high"))
    p_text = "p < 0.001" if p < 0.001 else f"p = {p:.2g}"
    return f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}], {p_text}"
