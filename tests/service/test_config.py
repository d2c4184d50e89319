"""The TOML configuration: the issue's minimal file works, every problem is one line naming
the file, the key and the fix."""

from __future__ import annotations

import pytest
import torch

from iglearn.cli import main
from iglearn.errors import IGLearnError
from iglearn.service.config import is_loopback, load_config, parse_config
from iglearn.service.storage import open_storage

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
    ({"model": MODEL | {"actions": ["left", "right"]}},
     ["[model] actions is ['left', 'right']", "3 distinct names, one per action"]),
    ({"model": MODEL | {"actions": ["up", "up", "down"]}}, ["[model] actions", "distinct"]),
    ({"model": MODEL | {"context_names": ["age"]}},
     ["[model] context_names is ['age']", "distinct names, one per context entry"]),
    ({"model": MODEL | {"feedback_names": ["a", "a"]}},
     ["[model] feedback_names is ['a', 'a']", "distinct names, one per feedback entry"]),
    ({"model": MODEL, "exploration": {"mode": "greedy"}}, ["[exploration] mode", "e2g"]),
    ({"model": MODEL, "exploration": {"epsilon": 0.0}}, ["[exploration] epsilon", "(0, 1]"]),
    ({"model": MODEL, "exploration": {"iota": float("nan")}}, ["[exploration] iota"]),
    ({"model": MODEL, "exploration": {"epsilon_rounds": 50}},
     ["[exploration] epsilon_final", "epsilon_rounds"]),
    ({"model": MODEL, "exploration": {"epsilon": 0.1, "epsilon_rounds": 5,
                                      "epsilon_final": 0.2}}, ["epsilon_final", "0.1]"]),
    ({"model": MODEL, "exploration": {"seed": -1}}, ["[exploration] seed", ">= 0"]),
    ({"model": MODEL, "exploration": {"seed": 1.5}}, ["[exploration] seed", "an integer"]),
    ({"model": MODEL, "learning": {"refit_every": 0}}, ["[learning] refit_every", ">= 1"]),
    ({"model": MODEL, "server": {"port": 70000}}, ["[server] port"]),
    ({"model": MODEL, "server": {"synchronous": "off"}}, ["[server] synchronous"]),
    ({"model": MODEL, "server": {"cors_origins": ["https://app.example.com/"]}},
     ["[server] cors_origins has 'https://app.example.com/'", "scheme://host[:port]"]),
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


def test_cors_origins_take_origins_or_any():
    assert parse_config({"model": MODEL}, "svc.toml").server.cors_origins == ()
    for origins in (["https://app.example.com", "http://localhost:3000", "http://[::1]:8080"],
                    ["*"]):
        config = parse_config({"model": MODEL, "server": {"cors_origins": origins}}, "svc.toml")
        assert config.server.cors_origins == tuple(origins)


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


def test_a_file_saved_with_a_byte_order_mark_is_read(tmp_path):
    """Windows' Notepad saves UTF-8 with a byte-order mark: it was "Invalid statement (at
    line 1, column 1)", naming nothing a user could see."""
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf[model]\nn_actions = 3\ncontext_dim = 4\n"
                     b"feedback_dim = 2\n")
    assert load_config(path).model.n_actions == 3


def test_command_line_overrides_are_checked():
    config = parse_config({"model": MODEL})
    assert config.replace(port=9000).server.port == 9000
    with pytest.raises(IGLearnError, match=r"\[server\] port"):
        config.replace(port=99999)


def test_loopback():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1")


LEARNER_BAD = [  # [model.learner] values the learner's settings refuse, and what they need
    ({"max_restarts": "2"}, "max_restarts", "an integer >= 0"),
    ({"max_restarts": 1.5}, "max_restarts", "an integer >= 0"),
    ({"max_restarts": -1}, "max_restarts", "an integer >= 0"),
    ({"max_restarts": True}, "max_restarts", "an integer >= 0"),
    ({"max_restarts": 2**63}, "max_restarts", "an integer >= 0"),
    ({"decoder_temperature": "0.1"}, "decoder_temperature", "a finite number > 0"),
    ({"decoder_temperature": 0}, "decoder_temperature", "a finite number > 0"),
    ({"restart_threshold": "none"}, "restart_threshold", "a finite number >= 0"),
    ({"corrector": 1}, "corrector", "true or false"),
    ({"device": "tpu"}, "device", "one of cpu"),
    ({"device": 3}, "device", "one of cpu"),
    ({"logdir": ""}, "logdir", "a non-empty string"),
    ({"optimisation": {"lr": "fast"}}, "optimisation.lr", "a finite number > 0"),
    ({"optimisation": {"epochs": 2.0}}, "optimisation.epochs", "an integer >= 0"),
    ({"optimisation": {"batch_size": 0}}, "optimisation.batch_size", "an integer >= 1"),
    ({"optimisation": 4}, "optimisation", "a table"),
    ({"optimisation": {"epoch": 2}}, "optimisation.epoch", "not a setting of Optimisation"),
]


@pytest.mark.parametrize(("learner", "key", "expected"), LEARNER_BAD)
def test_learner_settings_are_checked_against_their_types(learner, key, expected):
    with pytest.raises(IGLearnError) as error:
        parse_config({"model": MODEL | {"learner": learner}}, "svc.toml")
    message = str(error.value)
    assert message.startswith(f"svc.toml: [model.learner] {key} ") and expected in message
    assert "\n" not in message


def test_learner_tables_change_only_their_keys_of_the_algorithms_defaults():
    from iglearn.learners.settings import AIIGL_OPTIMISATION

    config = parse_config({"model": MODEL | {"algorithm": "ai-igl", "learner": {
        "optimisation": {"epochs": 5}, "refinements": 0, "temperature": 2}}})
    from iglearn.service.config import make_learner

    learner = make_learner(config)
    assert learner.optimisation.epochs == 5 and learner.refinements == 0
    assert learner.temperature == 2.0 and isinstance(learner.temperature, float)
    assert learner.optimisation.policy_epochs == AIIGL_OPTIMISATION.policy_epochs


def test_a_relative_logdir_is_relative_to_the_files_folder_as_its_db_is(tmp_path):
    """Two relative paths of one file resolve alike: [model.learner] logdir was taken
    relative to the current folder, [server] db relative to the file's folder."""
    from iglearn.service.config import make_learner

    config = parse_config({"model": MODEL | {"learner": {"logdir": "tb"}},
                           "server": {"db": "s.db"}}, str(tmp_path / "etc" / "svc.toml"))
    assert config.db_path == tmp_path / "etc" / "s.db"
    assert make_learner(config).logdir == str(tmp_path / "etc" / "tb")
    absolute = parse_config({"model": MODEL | {"learner": {"logdir": str(tmp_path / "a")}}})
    assert make_learner(absolute).logdir == str(tmp_path / "a")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without a CUDA GPU")
def test_a_device_this_machine_lacks_is_refused_at_start_not_at_each_refit():
    """device = "cuda" without a GPU was accepted, and every re-fit then failed (the service
    stayed in its warm-up exploration); it is refused with the file and the key."""
    with pytest.raises(IGLearnError, match=r"^svc\.toml: \[model\.learner\] device 'cuda': no "
                                           r"CUDA GPU is available"):
        parse_config({"model": MODEL | {"learner": {"device": "cuda"}}}, "svc.toml")
    assert parse_config({"model": MODEL | {"learner": {"device": "cpu"}}}, "svc.toml")


SETTINGS_BAD = [  # every numeric setting with a bound a value can cross
    ("learning", "pickup_seconds", 1e-9, "[0.05, 3600]"),
    ("learning", "pickup_seconds", 0.01, "[0.05, 3600]"),
    ("learning", "pickup_seconds", 86400.0, "[0.05, 3600]"),
    ("learning", "poll_seconds", 1e-9, "[0.05, 3600]"),
    ("learning", "refit_seconds", 1e300, "[0, 1e+09]"),
    ("learning", "join_window", 1e300, "[0, 1e+09]"),
    ("learning", "worker_threads", 2**31, "[1, 1024]"),
    ("server", "torch_threads", 2**31, "[1, 1024]"),
    ("server", "retention_days", 1e300, "[0, "),
    ("learning", "max_interactions", 2**63, "an integer >= 1"),
    ("learning", "refit_every", "500", "an integer"),
    ("learning", "join_window", "600", "a finite number"),
    ("exploration", "warmup", 10.5, "an integer"),
    ("server", "port", "8700", "an integer in [0, 65535]"),
    ("server", "port", -1, "an integer in [0, 65535]"),
    ("server", "port", 70000, "an integer in [0, 65535]"),
    ("learning", "worker_nice", -1, "an integer in [0, 19]"),
    ("server", "max_body_bytes", 0, "an integer >= 1"),
]


@pytest.mark.parametrize(("table", "key", "value", "expected"), SETTINGS_BAD)
def test_numeric_settings_out_of_their_range_are_named(table, key, value, expected):
    with pytest.raises(IGLearnError) as error:
        parse_config({"model": MODEL, table: {key: value}}, "svc.toml")
    message = str(error.value)
    assert message.startswith(f"svc.toml: [{table}] {key} is ") and expected in message


@pytest.mark.parametrize(("table", "key", "expected"), [
    ("learning", "refit_every", "an integer >= 1"),
    ("learning", "keep_versions", "an integer >= 1"),
    ("exploration", "warmup", "an integer >= 1"), ("server", "max_batch", "an integer >= 1"),
    ("learning", "refit_seconds", "a finite number > 0"),
    ("server", "header_timeout_seconds", "a finite number > 0")])
def test_a_setting_above_zero_says_so_alike_for_a_negative_value_and_zero(table, key,
                                                                        expected):
    for value in (-1, 0):
        with pytest.raises(IGLearnError) as error:
            parse_config({"model": MODEL, table: {key: value}}, "svc.toml")
        assert str(error.value).endswith(f"; expected {expected}"), (value, str(error.value))


TOML_BAD = [  # a line of [model.learner] or [learning], and the place named
    ("[model.learner]\nmax_restarts = inf", "[model.learner] max_restarts"),
    ("[model.learner]\noptimisation = {lr = nan}", "[model.learner.optimisation] lr"),
    ("[model.learner]\nmax_restarts = 1" + "0" * 30, "[model.learner] max_restarts"),
    ("[learning]\npickup_seconds = -inf", "[learning] pickup_seconds"),
    ("[exploration]\niota = 1e999", "[exploration] iota"),
]


@pytest.mark.parametrize(("lines", "where"), TOML_BAD)
def test_a_file_with_non_finite_or_huge_numbers_names_its_table_and_key(tmp_path, capsys,
                                                                       lines, where):
    path = tmp_path / "svc.toml"
    text = "[model]\nn_actions = 3\ncontext_dim = 2\nfeedback_dim = 2\n"
    path.write_text(text + lines.replace("[model.learner]", "[model.learner]", 1) + "\n")
    with pytest.raises(IGLearnError, match=f"^{path}: " + where.replace("[", r"\[")
                       .replace("]", r"\]") + " holds"):
        load_config(path)
    assert main(["serve", "db", "upgrade", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert where in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["svc.toml"]


URLS_BAD = ["postgresql://u:secret@[::1/db", "postgresql://u:secret@[zz]/db",
            "postgresql://u:secret@host:notaport/db", "postgresql://h:99999/db",
            "postgresql://h:5432:7/db", "postgresql://h:0/db", "postgresql://%zz@h/db",
            "postgres://u:secret@h/db#part"]


@pytest.mark.parametrize("url", URLS_BAD)
def test_a_malformed_postgresql_url_is_one_line_and_exit_2(tmp_path, capsys, url):
    with pytest.raises(IGLearnError, match=r"\[server\] db .* is not a PostgreSQL URL"):
        parse_config({"model": MODEL, "server": {"db": url}}, "svc.toml")
    path = tmp_path / "svc.toml"
    path.write_text(f'[model]\nn_actions = 3\ncontext_dim = 2\nfeedback_dim = 2\n'
                    f'[server]\ndb = "{url}"\n')
    for command in (["serve", "db", "upgrade"], ["serve", "keys", "add", "--role", "admin"],
                    ["serve"]):
        assert main([*command, "--config", str(path)]) == 2, command
        err = capsys.readouterr().err
        assert err.startswith("iglearn: error: ") and len(err.strip().splitlines()) == 1
        assert "not a PostgreSQL URL" in err and "secret" not in err
    with pytest.raises(IGLearnError, match="is not a PostgreSQL URL") as error:
        open_storage(url)  # from Python
    assert "secret" not in str(error.value)
    given = ["serve", "db", "upgrade", "--config", str(path), "--db", url]
    path.write_text("[model]\nn_actions = 3\ncontext_dim = 2\nfeedback_dim = 2\n")
    assert main(given) == 2 and "not a PostgreSQL URL" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["svc.toml"]
