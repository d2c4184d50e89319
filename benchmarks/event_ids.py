"""Benchmark: the service's SQLite storage with random and with time-ordered event ids.

    python benchmarks/event_ids.py [--stored 24000 400000] [--runs 3] [--group 3]

Stores interactions as the service's group commit does (``SQLiteStorage.add_interactions``:
a group of ``--group`` new decisions and the feedback of the previous group in one commit)
until ``--stored`` interactions are in the database, then measures the CPU time (this
process, with the WAL checkpoint thread) per interaction of the next 16,000. Event ids are
either ``uuid.uuid4().hex`` (random) or :func:`iglearn.service.ids.new_event_id` (UUID
version 7: the time first), made as each decision is. Runs alternate between the two; the
table gives every run's figure, in microseconds per interaction.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np

from iglearn.service.ids import new_event_id
from iglearn.service.storage import Decision, Feedback, SQLiteStorage

MEASURED = 16_000
"""Interactions measured after the database holds ``--stored``."""
IDS: dict[str, Callable[[], str]] = {"uuid4 (random)": lambda: uuid.uuid4().hex,
                                     "version 7 (time first)": new_event_id}


def cpu_per_interaction(make_id: Callable[[], str], stored: int, group: int) -> float:
    """Microseconds of CPU per interaction stored, after ``stored`` interactions."""
    rng = np.random.default_rng(0)
    contexts = rng.random((256, 64), dtype=np.float32)
    probabilities = np.full(10, 0.1)
    with tempfile.TemporaryDirectory(prefix="iglearn-event-ids-") as tmp:
        storage = SQLiteStorage(Path(tmp) / "service.db", checkpoint_seconds=1.0)
        try:
            pending: list[Decision] = []

            def one_group(i: int) -> None:
                now = time.time()
                made = [Decision(make_id(), contexts[(i + j) % 256], 3, 0.1, probabilities, 1,
                                 False, True, now) for j in range(group)]
                feedback = [Feedback(d.event_id, contexts[0], False, now) for d in pending]
                storage.add_interactions(made, feedback, 600.0)
                pending[:] = made

            for i in range(0, stored, group):
                one_group(i)
            start = time.process_time()
            for i in range(0, MEASURED, group):
                one_group(i)
            return (time.process_time() - start) / MEASURED * 1e6
        finally:
            storage.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stored", type=int, nargs="+", default=[24_000, 400_000],
                        help="interactions in the database before the measured ones")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--group", type=int, default=3,
                        help="decisions per commit (with the previous group's feedback)")
    args = parser.parse_args()
    print("| stored | event ids | µs of CPU per interaction, each run |")
    print("|---|---|---|")
    for stored in args.stored:
        figures: dict[str, list[float]] = {name: [] for name in IDS}
        for _ in range(args.runs):
            for name, make in IDS.items():
                figures[name].append(cpu_per_interaction(make, stored, args.group))
        for name, values in figures.items():
            print(f"| {stored:,} | {name} | {', '.join(f'{v:.1f}' for v in values)} |",
                  flush=True)


if __name__ == "__main__":
    main()
