"""Benchmark: how many rounds the demo needs to ground a person's gestures. A simulated
person plays the demo page's rounds against a real ``iglearn serve --demo`` process over
HTTP: each round a random coloured shape, the service's word, and the person's stroke
(:func:`iglearn.service.demo.simulated_stroke`): one gesture when the word is right by a
rule only the person knows (a different colour-to-word rule for each seed), another when it
is wrong. The service never receives the rule, only the strokes.

    python benchmarks/demo_rounds.py [--seeds 5] [--rounds 100] [--gestures tick,cross]
                                     [--think refit|SECONDS] [--in-process]
                                     [--jobs 1] [--out results/demo-rounds]

``--think refit`` (the default) is a patient person: after a gesture that makes a re-fit
due, the next round waits until that re-fit's model is served (as a person who takes a few
seconds per round would see it). A number of seconds instead makes every round take that
long. ``--in-process`` plays the same rounds against the service's own objects in this
process (decisions and feedback stored as the page's routes store them, each due re-fit run
at once, as the patient person waits for it): no server and no HTTP, so many seeds run in
minutes. Prints the share of right words in blocks of 10 rounds (mean over seeds), each
seed's share in rounds 21-40 and in the last 20, how many seeds were right in at least 80 %
of the last 20, the mean decoded reward of each gesture in the last 20
rounds and the re-fit times, and writes ``demo_rounds.csv`` (the tidy result schema) and
``demo_rounds.md``.
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from iglearn.experiments.results import markdown_table, tidy_frame, tidy_rows, write_outputs
from iglearn.service.demo import COLOURS, SHAPES, demo_tables, simulated_stroke
from iglearn.service.process import ServiceProcess, free_port, write_config

BLOCK = 10
TARGET_ROUNDS = 40
"""The mean share of right words in rounds TARGET_ROUNDS - 19 to TARGET_ROUNDS (all seeds)
should reach TARGET_SHARE..."""
TARGET_SHARE = 0.8
TARGET_SEEDS = 23 / 24
"""... and this share of the seeds should be right in TARGET_SHARE of the last 20 rounds."""


def wait_for_refit(http: httpx.Client, timeout: float = 120.0) -> None:
    """Wait until no re-fit is due or under way and the latest model is served."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not http.get("/demo/api/status").json()["refit_pending"]:
            return
        time.sleep(0.05)
    raise TimeoutError(f"no re-fit within {timeout} s")


def play(url: str, rounds: int, seed: int, gestures: tuple[str, str], think: str
         ) -> list[dict]:
    """Play ``rounds`` rounds as a person whose rule is the seed's; one record per round."""
    rng = np.random.default_rng(seed)
    shift = int(rng.integers(len(COLOURS)))  # the person's rule: word = colour + shift
    records = []
    with httpx.Client(base_url=url, timeout=60) as http:
        for r in range(1, rounds + 1):
            colour, shape = int(rng.integers(len(COLOURS))), int(rng.integers(len(SHAPES)))
            d = http.post("/demo/api/decide", json={"colour": colour, "shape": shape}).json()
            right = d["action"] == (colour + shift) % len(COLOURS)
            stroke = simulated_stroke(gestures[0] if right else gestures[1], rng)
            if think != "refit":
                time.sleep(float(think))
            answer = http.post("/demo/api/feedback", json={
                "event_id": d["event_id"], "stroke": stroke.round(1).tolist()})
            answer.raise_for_status()
            records.append({"round": r, "right": right, "explored": d["explored"],
                            "model_version": d["model_version"],
                            "decoded_reward": answer.json()["decoded_reward"]})
            if think == "refit":
                wait_for_refit(http)
        last = http.get("/demo/api/status").json()["last_refit"] or {}
        records[-1]["refit_seconds"] = last.get("seconds")
    return records


def play_in_process(config_path: Path, rounds: int, seed: int, gestures: tuple[str, str]
                    ) -> list[dict]:
    """:func:`play` with think 'refit', against a :class:`~iglearn.service.app.Service` in
    this process (exploration seeded from ``seed``); the learning worker's step
    (:func:`~iglearn.service.learning.run_once`) runs after every round."""
    import torch

    from iglearn.service.app import Service
    from iglearn.service.config import load_config
    from iglearn.service.demo import context_features, stroke_features
    from iglearn.service.learning import run_once
    from iglearn.service.storage import Feedback

    torch.set_num_threads(1)  # as the learning worker
    config = load_config(config_path)
    service = Service(config, insecure_no_auth=True)
    rng = np.random.default_rng(seed)
    shift = int(rng.integers(len(COLOURS)))  # the person's rule, as in play()
    allowed = np.ones((1, len(COLOURS)), dtype=bool)
    records = []
    last_seconds = None
    for r in range(1, rounds + 1):
        colour, shape = int(rng.integers(len(COLOURS))), int(rng.integers(len(SHAPES)))
        d = service.decide(context_features(colour, shape)[None], [f"round-{r}"], allowed)[0]
        right = d.action == (colour + shift) % len(COLOURS)
        stroke = simulated_stroke(gestures[0] if right else gestures[1], rng).round(1)
        y = stroke_features(stroke)
        service.add_feedback([Feedback(d.event_id, y, False, time.time())])
        served = service.served
        records.append({"round": r, "right": right, "explored": d.explored,
                        "model_version": d.model_version,
                        "decoded_reward": None if served is None
                        else float(served.learner.decode(y[None])[0])})
        outcome = run_once(service.storage, config)
        if outcome is not None and outcome.get("seconds") is not None:
            last_seconds = outcome["seconds"]
        service.load_served()
    records[-1] |= {"refit_seconds": last_seconds,
                    "versions_kept": len(service.storage.models())}
    service.storage.close()
    return records


def run_seed(seed: int, rounds: int, gestures: tuple[str, str], think: str,
             in_process: bool) -> list[dict]:
    """Play one seed's rounds (its own demo configuration, database and person) against a
    service process, or in this process (``in_process``); one record per round."""
    with tempfile.TemporaryDirectory(prefix="iglearn-demo-bench-") as folder:
        tables = demo_tables(seed)
        tables["exploration"]["seed"] = seed  # reproducible exploration draws
        config = write_config(Path(folder) / "demo.toml", tables)
        if in_process:
            return play_in_process(config, rounds, 1000 + seed, gestures)
        with ServiceProcess(config, free_port(), insecure_no_auth=True, demo=True) as s:
            records = play(s.url, rounds, 1000 + seed, gestures, think)
            records[-1]["versions_kept"] = len(
                httpx.get(s.url + "/v1/model", timeout=30).json()["versions"])
        return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--gestures", default="tick,cross",
                        help="the 'right' and the 'wrong' gesture (tick, cross, circle, "
                             "zigzag, line)")
    parser.add_argument("--think", default="refit",
                        help="'refit' (wait for each due re-fit) or seconds per round")
    parser.add_argument("--in-process", action="store_true",
                        help="play against the service's objects in this process, no HTTP "
                             "(think 'refit' only)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="seeds played at once, each in a process of its own")
    parser.add_argument("--out", type=Path, default=Path("results/demo-rounds"))
    args = parser.parse_args()
    if args.in_process and args.think != "refit":
        parser.error("--in-process plays a patient person: leave --think at 'refit'")
    gestures = tuple(args.gestures.split(","))
    assert len(gestures) == 2, "--gestures takes two names"

    rows: list[dict] = []
    right = np.zeros((args.seeds, args.rounds))
    rewards: dict[str, list[float]] = {"right": [], "wrong": []}
    refits: list[float] = []
    start = time.perf_counter()
    play_seed = functools.partial(run_seed, rounds=args.rounds, gestures=gestures,
                                  think=args.think, in_process=args.in_process)
    if args.jobs > 1:
        pool = ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn"))
        results = pool.map(play_seed, range(args.seeds))
    else:
        results = map(play_seed, range(args.seeds))
    for seed, records in enumerate(results):
        for rec in records:
            right[seed, rec["round"] - 1] = rec["right"]
            rows += tidy_rows("demo-rounds", "demo", seed, seed, rec["round"],
                              {"right": rec["right"], "explored": rec["explored"],
                               "model_version": rec["model_version"],
                               "decoded_reward": rec["decoded_reward"]},
                              {"gestures": args.gestures, "think": args.think})
            if rec["round"] > args.rounds - 20 and rec["decoded_reward"] is not None:
                rewards["right" if rec["right"] else "wrong"].append(rec["decoded_reward"])
        last = records[-1].get("refit_seconds")
        if last is not None:
            refits.append(last)
        print(f"seed {seed}: {''.join('+' if r['right'] else '.' for r in records)} "
              f"({records[-1]['versions_kept']} model versions kept)", flush=True)
    if args.jobs > 1:
        pool.shutdown()
    seconds = time.perf_counter() - start

    blocks = [(lo, min(lo + BLOCK, args.rounds)) for lo in range(0, args.rounds, BLOCK)]
    import pandas as pd

    table = pd.DataFrame({"rounds": [f"{lo + 1}-{hi}" for lo, hi in blocks],
                          "right (mean over seeds)": [right[:, lo:hi].mean()
                                                      for lo, hi in blocks]})
    first, last = TARGET_ROUNDS - 19, TARGET_ROUNDS
    per_seed = pd.DataFrame({
        "seed": range(args.seeds),
        f"right in {first}-{last}": (right[:, first - 1:last].mean(1)
                                     if args.rounds >= last else np.nan),
        "right in last 20": right[:, -20:].mean(1)})
    grounded = right[:, first - 1:last].mean() if args.rounds >= last else 0
    kept = int((right[:, -20:].mean(1) >= TARGET_SHARE).sum())
    seeds_met = kept >= TARGET_SEEDS * args.seeds - 1e-9
    text = "\n".join([
        f"# Demo: rounds to ground a two-gesture code ({args.seeds} seeds, "
        f"{args.rounds} rounds, gestures {gestures[0]} = right, {gestures[1]} = wrong, "
        f"think {args.think})", "",
        markdown_table(table), "", markdown_table(per_seed, exact=("seed",)), "",
        f"seeds right in at least {TARGET_SHARE:.0%} of the last 20 rounds: {kept} of "
        f"{args.seeds} (target >= {TARGET_SEEDS:.3g} of them: "
        f"{'met' if seeds_met else 'NOT met'})",
        f"right in rounds {first}-{last} over all seeds: {grounded:.2f} "
        f"(target >= {TARGET_SHARE}: {'met' if grounded >= TARGET_SHARE else 'NOT met'})",
        f"mean decoded reward in the last 20 rounds: right gestures "
        f"{np.mean(rewards['right']) if rewards['right'] else float('nan'):.2f}, wrong gestures "
        f"{np.mean(rewards['wrong']) if rewards['wrong'] else float('nan'):.2f}",
        f"last re-fit of each seed: {', '.join(f'{s:.2f}' for s in refits)} s; "
        f"benchmark wall time {seconds:.0f} s", ""])
    settings = {"seeds": args.seeds, "rounds": args.rounds, "gestures": args.gestures,
                "think": args.think, "in_process": args.in_process,
                "demo_config": demo_tables()}
    args.out.mkdir(parents=True, exist_ok=True)
    print(write_outputs(args.out, "demo_rounds", tidy_frame(rows), text, settings))


if __name__ == "__main__":
    main()
