"""The generator of command-line options from settings dataclasses."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass, field
from typing import Literal

import pytest

from iglearn.cli.settings import (
    HelpFormatter,
    add_settings,
    build_settings,
    field_docs,
    value_parser,
)


@dataclass(frozen=True)
class Inner:
    """Nested settings."""

    lr: float = 0.5
    """Step size, see :class:`~iglearn.learners.BatchIGL` and ``fit``; 100% sure."""


@dataclass
class Base:
    """Settings with a base class."""

    seed: int = 0
    """Root seed."""


@dataclass
class Toy(Base):
    """Every kind of field the generator reads."""

    samples: int = 10
    """Interactions per trial."""
    threshold: float | None = None
    """A threshold;
    None means 1/K."""
    mode: Literal["a", "b"] = "a"
    """How."""
    names: tuple[str, ...] = ("x", "y")
    """Which ones."""
    sizes: tuple[int, ...] = (1, 2)
    """How many."""
    folder: str | None = None
    """Where."""
    loud: bool = True
    """Shout."""
    inner: Inner = field(default_factory=Inner)
    """The nested settings."""


def parser_for(settings: object, **options) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(formatter_class=HelpFormatter)
    add_settings(parser, settings, "toy", "toy settings", **options)
    return parser


def test_field_docs_are_one_line_of_plain_text_with_the_bases_fields():
    docs = field_docs(Toy)
    assert docs["seed"] == "Root seed."
    assert docs["threshold"] == "A threshold; None means 1/K."
    assert field_docs(Inner)["lr"] == "Step size, see BatchIGL and fit; 100% sure."


def test_options_given_replace_the_values_and_others_keep_theirs():
    parser = parser_for(Toy())
    args = parser.parse_args(["--samples", "7", "--threshold", "0.3", "--mode", "b",
                              "--names", "z,w", "--sizes", "3", "--folder", "data",
                              "--no-loud", "--lr", "0.1"])
    assert build_settings(args, Toy(), "toy") == Toy(
        samples=7, threshold=0.3, mode="b", names=("z", "w"), sizes=(3,), folder="data",
        loud=False, inner=Inner(lr=0.1))
    start = Toy(samples=99, inner=Inner(lr=0.2))
    assert build_settings(parser.parse_args(["--seed", "4"]), start, "toy") == Toy(
        seed=4, samples=99, inner=Inner(lr=0.2))


def test_none_and_skipped_fields():
    parser = parser_for(Toy(threshold=0.4), skip=("seed",))
    assert build_settings(parser.parse_args(["--threshold", "none"]), Toy(threshold=0.4),
                          "toy").threshold is None
    with pytest.raises(SystemExit):
        parser.parse_args(["--seed", "1"])


def test_help_is_the_docstring_with_the_default(capsys):
    with pytest.raises(SystemExit):
        parser_for(Toy(samples=12)).parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for expected in ("--samples SAMPLES Interactions per trial. (default: 12)",
                     "A threshold; None means 1/K. (default: none)",
                     "--mode {a,b}", "(default: x,y)", "--loud, --no-loud Shout. (default: true)",
                     "--names NAMES[,...]", "100% sure. (default: 0.5)"):
        assert expected in text


@pytest.mark.parametrize("name, text, words", [
    ("samples", "0", "integer >= 1"),
    ("seed", "-1", "integer >= 0"),
    ("seed", "1.5", "integer >= 0"),
    ("threshold", "nan", "finite number >= 0"),
    ("threshold", "-inf", "finite number >= 0"),
    ("mode", "c", "'c' is not one of a, b"),
    ("names", "x,", "must not be empty"),
    ("sizes", "1,-2", "integer >= 0"),
    ("names", 'a,"b', "quote an item that holds a comma"),
])
def test_bad_values_name_what_the_value_must_be(name, text, words):
    cls = Toy if name != "seed" else Base
    with pytest.raises(argparse.ArgumentTypeError, match=words):
        value_parser(cls, name)(text)


@pytest.mark.parametrize("text, items", [
    ("a,b", ("a", "b")),
    (" a , b", ("a", "b")),
    ('"left, slow",right', ("left, slow", "right")),
    ('"say ""hi""",x', ('say "hi"', "x")),
    # a quoted item keeps its spaces (a column ' x' could not be named: it read 'x')
    ('" x", "y " , z ', (" x", "y ", "z")),
    ('" x"', (" x",)),
])
def test_a_list_option_reads_its_items_as_one_csv_row(text, items):
    """A list option's items are separated by commas; an item that holds a comma or has
    spaces at its ends is quoted (a quote inside doubled), as ``errors.option_list`` writes
    them."""
    from iglearn.errors import option_list

    assert value_parser(Toy, "names")(text) == items
    assert value_parser(Toy, "names")(shlex.split(option_list(items))[0]) == items


def test_a_quoted_text_option_keeps_its_spaces():
    """A text option quoted whole reads its text between the quotes, spaces kept (a column
    ' arm' could not be named); not quoted, it is read without the spaces around it."""
    parse = value_parser(Toy, "folder")
    assert parse('" arm "') == " arm "
    assert parse(" arm ") == "arm"
    assert parse('a "b"') == 'a "b"'
    with pytest.raises(argparse.ArgumentTypeError, match="as one quoted value"):
        parse('"a","b"')


@dataclass
class Undocumented:
    n: int = 1


@dataclass
class Unknown:
    values: list[int] = field(default_factory=list)
    """A list."""


def test_a_field_without_docstring_or_with_an_unknown_type_is_refused():
    for cls in (Undocumented, Unknown):
        with pytest.raises(TypeError, match=f"{cls.__name__}"):
            parser_for(cls())


@pytest.mark.parametrize("algorithm", ["igl", "ai-igl", "igl-p", "vi-igl"])
def test_every_number_a_learner_refuses_at_0_is_refused_by_the_option(algorithm):
    """A numeric setting that the learner refuses at 0 and takes at 1 (a count of at least 1,
    a positive scale) is refused by its option's parser too, so that the command line's
    message names the option (``argument --beta: must be a finite number > 0``)."""
    from dataclasses import fields, replace

    from iglearn.errors import IGLearnError
    from iglearn.learners.registry import learner_class
    from iglearn.learners.settings import Optimisation

    learner = learner_class(algorithm)(seed=0)
    places = [(type(learner), learner, lambda value, name: replace(learner, **{name: value})),
              (Optimisation, learner.optimisation,
               lambda value, name: replace(learner, optimisation=replace(
                   learner.optimisation, **{name: value})))]
    checked = 0
    for cls, settings, changed in places:
        for f in fields(settings):
            if f.name == "seed" or not isinstance(getattr(settings, f.name), int | float) \
                    or isinstance(getattr(settings, f.name), bool):
                continue
            kind = type(getattr(settings, f.name))
            try:
                changed(kind(1), f.name)
            except IGLearnError:  # not a count or a scale (IGL-P's threshold > 1)
                continue
            try:
                changed(kind(0), f.name)
            except IGLearnError:
                checked += 1
                with pytest.raises(argparse.ArgumentTypeError, match=r"> 0|>= 1|in \[1, "):
                    value_parser(cls, f.name)("0")
    assert checked >= 3
