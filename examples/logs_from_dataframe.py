"""Your own logs from a pandas DataFrame (or a CSV file): one row per interaction, vectors as
columns context_0, context_1, ... (or one column of lists), action, probability, feedback_0,
..., and K given as n_actions (an argument or a column).

Run: python examples/logs_from_dataframe.py
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from iglearn import BatchIGL, InteractionLog, Optimisation
from iglearn.data.formats import read_log, write_table

PREFERENCES = np.array([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
"""Hidden: the best of 3 actions for a context x is argmax PREFERENCES @ x."""


def my_logging_system(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Stands for your own data: a 2-feature context, 3 actions played uniformly, and a
    'dwell time' and 'clicked' feedback that depend on whether the action was right."""
    x = rng.normal(size=(n, 2))
    right = (x @ PREFERENCES.T).argmax(1)  # never logged: the reward stays hidden
    action = rng.integers(0, 3, n)
    reward = action == right
    return pd.DataFrame({
        "context": list(x),  # a column of vectors
        "action": action,
        "probability": np.full(n, 1 / 3),
        "feedback_0": np.where(reward, 5.0, 1.0) + 0.5 * rng.normal(size=n),  # dwell time
        "feedback_1": (rng.random(n) < np.where(reward, 0.8, 0.1)).astype(float),  # clicked
    })


def main() -> None:
    rng = np.random.default_rng(0)
    frame = my_logging_system(1500, rng)
    log = InteractionLog.from_frame(frame, n_actions=3, source="my logs")
    print(f"log: {len(log)} interactions, d_x = {log.context_dim}, d_y = {log.feedback_dim}")

    with tempfile.TemporaryDirectory() as root:  # the same log through a CSV file
        path = Path(root) / "log.csv"
        write_table(log, path)
        print(f"CSV columns: {path.read_text().splitlines()[0]}")
        log = read_log(path)

    learner = BatchIGL(optimisation=Optimisation(max_steps=120), max_restarts=1, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner.fit(log)
    history = pd.DataFrame([vars(record) for record in learner.report_.history])
    print(f"indicator {learner.report_.indicator:.3f}, restarts {learner.report_.restarts}; "
          f"the last epoch of each stage:")
    last = history[history.attempt == history.attempt.max()]
    print(last.groupby("stage", sort=False)[["loss", "indicator"]].last().round(3))
    test = rng.normal(size=(1000, 2))
    accuracy = np.mean(learner.predict(test) == (test @ PREFERENCES.T).argmax(1))
    print(f"share of new contexts given their best action: {accuracy:.3f}")
    decoded = learner.decode(log.feedback)
    print(f"decoded reward, mean by clicked: "
          f"{pd.Series(decoded).groupby(log.feedback[:, 1]).mean().round(2).to_dict()}")
    print(log.to_frame().head(3).round(2).to_string())


if __name__ == "__main__":
    main()
