"""Benchmark: live learning over HTTP. A simulated user on scikit-learn's digits drives a
real ``iglearn serve`` process: each interaction asks for a decision on a digit image, and
answers with the feedback image the IGL digits task draws from the hidden reward (an image
of 1 if the action named the digit, of 0 if not). The service never sees the reward.

    python benchmarks/serve_digits.py [--interactions 20000] [--clients 4]
                                      [--check-every 2000] [--out results/serve-digits]

Every ``--check-every`` interactions it exports the served model and measures its greedy
accuracy on the held-out digits; prints the curve, whether the final accuracy reaches the
target (>= 0.9) and whether the model served at the end is the newest stored, and writes
``serve_digits.csv`` and ``serve_digits.png``.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

from iglearn.client import Client
from iglearn.envs import digits_environment
from iglearn.models.archive import load_archive
from iglearn.service.process import ServiceProcess, add_key, free_port, write_config

TARGET = 0.9
"""The served model's greedy accuracy on held-out digits at the end of the run that the
service aims for."""


def simulated_user(url: str, key: str, n: int, seed: int, counter: list[int],
                   lock: threading.Lock) -> None:
    """Play ``n`` interactions: decide, then feedback drawn from the hidden reward."""
    env = digits_environment()
    rng = np.random.default_rng(seed)
    with Client(url, key) as client:
        for _ in range(n):
            contexts = env.contexts(1, rng)
            decision = client.decide(contexts.features[0])
            action = np.array([decision["action"]])
            reward = env.reward(contexts, action)
            feedback = env.feedback(contexts, action, reward, rng)
            client.feedback(decision["event_id"], feedback[0])
            with lock:
                counter[0] += 1


def served_accuracy(url: str, admin: str, test: tuple[np.ndarray, np.ndarray]
                    ) -> tuple[int, float]:
    """The served model's version and greedy accuracy on ``test`` (0, nan before a fit)."""
    headers = {"authorization": f"Bearer {admin}"}
    response = httpx.get(url + "/v1/model/export", headers=headers, timeout=30)
    if response.status_code == 404:
        return 0, float("nan")
    response.raise_for_status()
    learner = load_archive(response.content)
    version = int(httpx.get(url + "/v1/model", headers=headers, timeout=30).json()["version"])
    return version, float(learner.accuracy(*test))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interactions", type=int, default=20000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--check-every", type=int, default=2000)
    parser.add_argument("--refit-every", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("results/serve-digits"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    env = digits_environment()
    test = env.test_set()
    with tempfile.TemporaryDirectory(prefix="iglearn-serve-digits-") as tmp:
        config = write_config(Path(tmp) / "service.toml", {
            "model": {"n_actions": 10, "context_dim": 64, "feedback_dim": 64,
                      "algorithm": "igl", "seed": args.seed},
            "exploration": {"mode": "e2g", "schedule": "paper", "warmup": args.warmup},
            "learning": {"refit_every": args.refit_every, "min_interactions": 300},
            "server": {"db": "service.db"}})
        client_key, admin_key = add_key(config, "client"), add_key(config, "admin")
        with ServiceProcess(config, free_port()) as service:
            counter, lock = [0], threading.Lock()
            share = [args.interactions // args.clients] * args.clients
            share[0] += args.interactions - sum(share)
            threads = [threading.Thread(target=simulated_user,
                                        args=(service.url, client_key, n,
                                              args.seed * 1000 + i + 1, counter, lock))
                       for i, n in enumerate(share)]
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            rows = []
            next_check = args.check_every
            while any(t.is_alive() for t in threads) or next_check <= args.interactions:
                if counter[0] >= next_check or not any(t.is_alive() for t in threads):
                    done = counter[0]
                    version, accuracy = served_accuracy(service.url, admin_key, test)
                    rows.append((done, version, accuracy, time.perf_counter() - start))
                    print(f"{done:6d} interactions  model v{version:<3d} greedy accuracy "
                          f"{accuracy:.3f}  ({rows[-1][3]:.0f} s)", flush=True)
                    next_check = (done // args.check_every + 1) * args.check_every
                    if not any(t.is_alive() for t in threads):
                        break
                time.sleep(0.2)
            for thread in threads:
                thread.join()
            # one last re-fit on everything joined, as the service would do on its cadence
            httpx.post(service.url + "/v1/model/refit?wait=300",
                       headers={"authorization": f"Bearer {admin_key}"}, timeout=320)
            version, accuracy = served_accuracy(service.url, admin_key, test)
            rows.append((counter[0], version, accuracy, time.perf_counter() - start))
            print(f"{counter[0]:6d} interactions  model v{version:<3d} greedy accuracy "
                  f"{accuracy:.3f} after a final re-fit ({rows[-1][3]:.0f} s)")
            time.sleep(2.0)  # beyond pickup_seconds + 1 s: the newest must be served
            info = httpx.get(service.url + "/v1/model", timeout=30,
                             headers={"authorization": f"Bearer {admin_key}"}).json()
            newest_served = info["version"] == info["newest_version"]
            print(f"served at the end: v{info['version']}, newest stored: "
                  f"v{info['newest_version']} (behind {info['behind_seconds']:.1f} s)")
    write_outputs(rows, args.out)
    final = rows[-1][2]
    print(f"final greedy accuracy {final:.3f} (target >= {TARGET}): "
          f"{'met' if final >= TARGET else 'NOT met'}")
    print(f"the newest stored version is served at the end: "
          f"{'met' if newest_served else 'NOT met'}")


def write_outputs(rows: list[tuple[int, int, float, float]], out: Path) -> None:
    """serve_digits.csv and the plot of accuracy against interactions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = ["interactions,model_version,accuracy,seconds"]
    lines += [f"{n},{v},{a:.4f},{s:.1f}" for n, v, a, s in rows]
    (out / "serve_digits.csv").write_text("\n".join(lines) + "\n")
    figure, axis = plt.subplots(figsize=(6, 4))
    axis.plot([r[0] for r in rows], [r[2] for r in rows], marker="o")
    axis.axhline(TARGET, color="grey", linestyle="--", label=f"target {TARGET}")
    axis.set_xlabel("interactions served")
    axis.set_ylabel("greedy accuracy, held-out digits")
    axis.set_ylim(0, 1)
    axis.legend()
    axis.set_title("iglearn serve: live learning on digits over HTTP")
    figure.tight_layout()
    figure.savefig(out / "serve_digits.png", dpi=120)
    print(f"wrote {out / 'serve_digits.csv'} and {out / 'serve_digits.png'}")


if __name__ == "__main__":
    main()
