"""The TOML configuration: the issue's minimal file works, every problem is one line naming
the file, the key and the fix."""

from __future__ import annotations

import pytest

from iglearn.errors import IGLearnError
from iglearn.service.config import is_loopback, load_config, parse_config

MINIMAL = """\
[model]
n_actions = 10
context_dim = 64
feedback_dim = 64
algorithm = "igl"
[server]
host = "127.0.0.1"
port = 8700
db = "service.db"      # relative to the config file's folder
"""


def test_minimal_file_works_with_defaults(tmp_path):
    path = tmp_path / "service.toml"
    path.write_text(MINIMAL)
    config = load_config(path)
    assert (config.model.n_actions, config.model.context_dim) == (10, 64)
    assert config.db_path == tmp_path / "service.db"
    assert config.exploration.mode == "e2g" and config.learning.refit_every > 0


MODEL = {"n_actions": 3, "context_dim": 2, "feedback_dim": 2}


@pytest.mark.parametrize(("document", "words"), [
    ({}, ["[model]", "missing"]),
    ({"model": MODEL, "serve": {}}, ["unknown table [serve]"]),
    ({"model": MODEL | {"n_action": 3}}, ["unknown key 'n_action'", "[model]"]),
    ({"model": {"n_actions": 3, "context_dim": 2}}, ["feedback_dim"]),
    ({"model": MODEL | {"n_actions": "3"}}, ["[model] n_actions", "an integer"]),
    ({"model": MODEL | {"n_actions": 1}}, ["[model] n_actions", "[2,"]),
    ({"model": MODEL | {"context_dim": 0}}, ["[model] context_dim"]),
    ({"model": MODEL | {"algorithm": "ppo"}}, ["[model] algorithm", "igl", "ai-igl"]),
    ({"model": MODEL, "exploration": {"mode": "greedy"}}, ["[exploration] mode", "e2g"]),
    ({"model": MODEL, "exploration": {"epsilon": 0.0}}, ["[exploration] epsilon", "(0, 1]"]),
    ({"model": MODEL, "exploration": {"iota": float("nan")}}, ["[exploration] iota"]),
    ({"model": MODEL, "exploration": {"epsilon_rounds": 50}},
     ["[exploration] epsilon_final", "epsilon_rounds"]),
    ({"model": MODEL, "exploration": {"epsilon": 0.1, "epsilon_rounds": 5,
                                      "epsilon_final": 0.2}}, ["epsilon_final", "0.1]"]),
    ({"model": MODEL, "exploration": {"seed": -1}}, ["[exploration] seed", ">= 0"]),
    ({"model": MODEL, "exploration": {"seed": 1.5}}, ["[exploration] seed", "an integer"]),
    ({"model": MODEL, "learning": {"refit_every": 0}}, ["[learning] refit_every", "> 0"]),
    ({"model": MODEL, "server": {"port": 70000}}, ["[server] port"]),
    ({"model": MODEL, "server": {"synchronous": "off"}}, ["[server] synchronous"]),
    ({"model": MODEL | {"learner": {"epochs": 2}}}, ["[model.learner] epochs"]),
    ({"model": MODEL | {"learner": {"optimisation": {"epoch": 2}}}},
     ["optimisation.epoch"]),
])
def test_problems_are_named(document, words):
    with pytest.raises(IGLearnError) as error:
        parse_config(document, "svc.toml")
    message = str(error.value)
    assert message.startswith("svc.toml: ") and "\n" not in message
    for word in words:
        assert word in message


def test_an_exploration_seed_makes_the_draws_reproducible():
    seeded = parse_config({"model": MODEL, "exploration": {"seed": 3}}, "svc.toml").exploration
    again = [seeded.make_rng(10).random(4) for _ in range(2)]
    assert (again[0] == again[1]).all()
    assert not (seeded.make_rng(11).random(4) == again[0]).all()   # later start, new draws
    fresh = parse_config({"model": MODEL}, "svc.toml").exploration
    assert fresh.seed is None


def test_not_toml(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[model\n")
    with pytest.raises(IGLearnError, match="not valid TOML"):
        load_config(path)


def test_command_line_overrides_are_checked():
    config = parse_config({"model": MODEL})
    assert config.replace(port=9000).server.port == 9000
    with pytest.raises(IGLearnError, match=r"\[server\] port"):
        config.replace(port=99999)


def test_loopback():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1")
