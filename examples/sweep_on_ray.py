"""A sweep on Ray: Table-1-style fits over a grid of learning rates, the trials spread over a
local Ray instance (or a cluster: pass its address), one tidy table back.

Needs the 'ray' extra: pip install -e '.[ray]' in the clone.
Run: python examples/sweep_on_ray.py
"""

from __future__ import annotations

from iglearn.experiments.runner import Execution
from iglearn.experiments.sweep import run_sweep, summary
from iglearn.experiments.table1 import Table1Config


def main() -> None:
    base = Table1Config(trials=2, samples=500, dataset="digits", methods=("IGL",))
    execution = Execution(backend="ray", jobs=2, show_progress=False)
    frame = run_sweep(base, {"lr": [0.01, 0.04]}, execution)
    print(summary(frame, ["lr"]).to_string(index=False, float_format="{:.3g}".format))


if __name__ == "__main__":
    main()
