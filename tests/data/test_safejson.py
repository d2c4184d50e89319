"""The one JSON (and TOML) reader and writer: every number a text gives is a finite float or
an integer of at most MAX_INTEGER_DIGITS digits (checked on its digits, before conversion),
a refused value is named by its place; every JSON iglearn writes is strict (no NaN or
Infinity literal)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from iglearn.data import safejson

HUGE = "1" + "0" * 400
"""An integer no float holds (the issue's example)."""

REFUSED_JSON = [  # text, the place named
    (f'{{"context": [0, {HUGE}, 0]}}', "context[1]"),
    (f'{{"context": [-{HUGE}]}}', "context[0]"),
    ('{"context": [0, 0, 123456789012345678901]}', "context[2]"),  # 21 digits
    (f'{{"contexts": [[0, 0], [0, {HUGE}]]}}', "contexts[1][1]"),
    (f'{{"stroke": [[1, 2], [3, {HUGE}]]}}', "stroke[1][1]"),
    (f'{{"a": {{"b": {{"c": [{HUGE}]}}}}}}', "a.b.c[0]"),
    ('{"feedback": [1e400, 0]}', "feedback[0]"),
    ('{"feedback": [0, -1e309]}', "feedback[1]"),
    ('{"feedback": [0.' + "0" * 30 + '1e400]}', "feedback[0]"),
    ('{"feedback": [NaN]}', "feedback[0]"),
    ('{"feedback": [Infinity]}', "feedback[0]"),
    ('{"feedback": [-Infinity]}', "feedback[0]"),
    ('{"version": NaN}', "version"),
    ('{"context": [0], "context": [1]}', ""),
    ('{"a": [{"k": 1, "k": 2}]}', "a[0]"),
    (f"[{HUGE}]", "[0]"),
    (HUGE, ""),
    ("NaN", ""),
    ('{"format": {"\\r": Infinity}}', "format.'\\r'"),  # a key with a control character
    ('{"a\\u202eb": [NaN]}', "'a\\u202eb'[0]"),
]


@pytest.mark.parametrize(("text", "where"), REFUSED_JSON)
def test_every_out_of_range_number_is_refused_where_it_stands(text, where):
    for given in (text, text.encode()):
        with pytest.raises(safejson.Refused) as error:
            safejson.parse(given, "the body", "send finite numbers")
        assert error.value.where == where
        message = str(error.value)
        assert message.startswith("the body: ") and message.endswith("; send finite numbers")
        assert "\n" not in message and len(message) < 400  # the number itself is cut short


def test_a_key_given_twice_is_named_with_its_object():
    for text, parts in (('{"context": [0], "context": [1]}', ("context",)),
                        ('{"a": [{"k": 1, "k": 2}]}', ("a", 0, "k"))):
        with pytest.raises(safejson.Refused, match=f"holds the key '{parts[-1]}' twice") as e:
            safejson.parse(text, "the body", "fix")
        assert e.value.parts == parts


def test_numbers_within_the_limits_are_read_as_json_reads_them():
    text = ('{"int": 12345678901234567890, "neg": -12345678901234567890, "tiny": 1e-400, '
            '"big": 1.7e308, "long": 0.' + "1" * 40 + ', "list": [1, 2.5, -3]}')
    assert safejson.parse(text, "x", "y") == json.loads(text)
    assert all(isinstance(v, int) for v in safejson.parse("[1, 22, 333]", "x", "y"))


def test_digits_inside_strings_are_not_read_as_long_numbers():
    """An id such as "5e123f..." (a service event id) is not a 3-digit exponent: only the
    numbers outside strings send a text down the checked path, and those are still refused."""
    ids = '{"event_id": "5e1230123456789012345678901a", "k\\"e999": [0.5, 1]}'
    assert not safejson._long_numbers(ids)
    assert safejson.parse(ids, "x", "y") == json.loads(ids)
    for text, where in (('{"event_id": "5e123", "feedback": [0, 1e400]}', "feedback[1]"),
                        ('{"id": "a\\"b", "n": 123456789012345678901}', "n")):
        assert safejson._long_numbers(text)
        with pytest.raises(safejson.Refused) as error:
            safejson.parse(text, "the body", "fix")
        assert error.value.where == where


def test_a_number_too_long_for_int_is_refused_too():
    for text in ("1" * 5000, "[" + "9" * 4400 + "]", '{"a": -' + "9" * 10000 + "}"):
        with pytest.raises(safejson.Refused, match="digits"):
            safejson.parse(text, "x", "y")


REFUSED_TOML = [  # the document, the place named (table and key)
    ("[model.learner]\nmax_restarts = inf", "[model.learner] max_restarts"),
    ("[model.learner]\nmax_restarts = -inf", "[model.learner] max_restarts"),
    ("[model.learner]\noptimisation = {lr = nan}", "[model.learner.optimisation] lr"),
    ("[learning]\npickup_seconds = 1e400", "[learning] pickup_seconds"),
    (f"[model]\nn_actions = {HUGE[:30]}", "[model] n_actions"),
    ("[server]\nport = +nan", "[server] port"),
    ("top = [1.0, inf]", "top[1]"),
    ("[a]\nb = [[1.0], [2.0, -nan]]", "[a] b[1][1]"),
]


@pytest.mark.parametrize(("text", "where"), REFUSED_TOML)
def test_every_non_finite_or_huge_toml_number_names_its_table_and_key(text, where):
    with pytest.raises(safejson.Refused) as error:
        safejson.parse_toml(text, "svc.toml", "fix the file")
    assert error.value.where == where
    assert str(error.value).startswith(f"svc.toml: {where} ")


def test_toml_too_long_an_integer_or_not_toml_is_one_line():
    for text in (f"a = {'9' * 5000}", "[model\n", "a = 1\na = 2"):
        with pytest.raises(safejson.Refused, match="not valid TOML") as error:
            safejson.parse_toml(text, "svc.toml", "fix the file")
        assert "\n" not in str(error.value)


def test_the_writer_never_writes_a_non_finite_literal():
    record = {"nan": float("nan"), "inf": np.float32("inf"), "ok": np.float64(0.5),
              "n": np.int64(3), "flag": np.bool_(True), "list": (1.0, float("-inf")),
              "array": np.array([1.0, np.nan]), "path": Path("some/where"),
              "nested": {1: [{"deep": -math.inf}]}, "matrix": np.full((2, 2), np.inf)}
    expected = {"nan": None, "inf": None, "ok": 0.5, "n": 3, "flag": True,
                "list": [1.0, None], "array": [1.0, None], "path": "some/where",
                "nested": {"1": [{"deep": None}]}, "matrix": [[None, None], [None, None]]}
    assert safejson.ready(record) == expected
    for indent in (None, 2):
        text = safejson.dumps(record, indent=indent)
        assert "NaN" not in text and "Infinity" not in text
        assert safejson.parse(text, "x", "y") == expected  # strict JSON reads it back


def test_the_writer_can_refuse_what_a_record_cannot_hold():
    def refuse(value: object) -> object:
        raise TypeError(f"cannot record {type(value).__name__}")

    assert safejson.dumps([np.float32(2.0)], other=refuse) == "[2.0]"
    with pytest.raises(TypeError, match="cannot record object"):
        safejson.dumps([object()], other=refuse)
