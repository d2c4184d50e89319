"""Command-line options generated from settings dataclasses.

Every setting of iglearn is one dataclass field with an attribute docstring (the string
literal right after the field). :func:`add_settings` gives each field of a settings object one
option: ``--kebab-case`` of the field's name, its docstring as help and its value in that
object as default. A field that holds a dataclass (``BatchIGL.optimisation``) gives one option
per field of its own, under the same kebab-case rule. :func:`build_settings` applies the
options given on the command line to a settings object; :func:`value_parser` reads one value
of a field as its option does.

Types: ``int``, ``float``, ``str``, ``bool`` (``--flag/--no-flag``), ``X | None`` (the value
``none`` gives None, except for ``str``), ``tuple[X, ...]`` (comma-separated values) and
``Literal[...]``; a union of ``str`` with types no command line can write (a policy given as
a torch module or a factory, in Python) is its ``str`` part. Types are read with
:func:`iglearn.hints.settings_hints`: the torch types that settings modules import only for
the type checker (so that building a parser imports no torch) read as
:class:`~iglearn.hints.Unresolved`, which such a union drops. What a type does not say is in
:func:`choices` (the values of a ``str`` setting) and :data:`POSITIVE`: every number is
finite and at least 0, those named in ``POSITIVE`` above 0.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import math
import re
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import Field, dataclass, fields, is_dataclass, replace
from functools import cache, partial
from typing import Any, Literal, TypeVar, cast

from iglearn.errors import IGLearnError
from iglearn.errors import shown as quoted
from iglearn.hints import INTEGER_LIMIT, settings_hints
from iglearn.learners.settings import POSITIVE_SETTINGS
from iglearn.threads import MAX_THREADS

T = TypeVar("T")

# Where the values of each str setting are defined, by field name (a name means one setting in
# every class): (module, attribute), imported only when a parser needs that setting.
CHOICE_SOURCES: Mapping[str, tuple[str, str]] = {
    "backend": ("iglearn.experiments.runner", "BACKENDS"),
    "dataset": ("iglearn.envs.mnist", "DATASETS"),
    "decoder": ("iglearn.learners.settings", "DECODER_KINDS"),
    "device": ("iglearn.devices", "DEVICES"),
    "exploit": ("iglearn.learners.settings", "EXPLOIT"),
    "families": ("iglearn.envs.section6", "FAMILIES"),
    "method": ("iglearn.learners.settings", "METHODS"),
    "methods": ("iglearn.experiments.configs", "PAPER"),
    "policy": ("iglearn.learners.settings", "POLICY_KINDS"),
    "rule": ("iglearn.learners.settings", "RULES"),
    "schedule": ("iglearn.learners.schedules", "SCHEDULES"),
}


def choices() -> Mapping[str, tuple[str, ...]]:
    """The values every str setting of :data:`CHOICE_SOURCES` takes (imports them all)."""
    return {name: choices_of(name) or () for name in CHOICE_SOURCES}


# Numeric settings that must be above 0 (every other one must be at least 0): the learners'
# (POSITIVE_SETTINGS), the schedules', the experiments' and the command's own.
POSITIVE = POSITIVE_SETTINGS | frozenset({
    "bci_samples", "clusters", "eta", "eval_every", "iota", "jobs", "rounds", "samples",
    "stack", "threads", "trials", "update_every",
})

# Integer settings with an upper bound of their own (every other one is below
# INTEGER_LIMIT), by field name.
MAXIMA: Mapping[str, int] = {"threads": MAX_THREADS}

NONE = "none"


def flag(name: str) -> str:
    """The option of a field: ``decoder_temperature`` -> ``--decoder-temperature``."""
    return "--" + name.replace("_", "-")


@cache
def field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings of a dataclass's fields (its bases' too), read with ``ast``
    from the class source, as one line of plain text each, a field of the class they name
    (one with an underscore, ``shuffle_rows``) named as its option (``--shuffle-rows``)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if "__dataclass_fields__" not in vars(klass):
            continue
        tree = _class_definitions(klass.__module__).get(klass.__qualname__)
        if tree is None:  # not at the top level of its module: read its own source
            tree = cast(ast.ClassDef,
                        ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0])
        body = tree.body
        for statement, after in zip(body, body[1:], strict=False):
            if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[statement.target.id] = _plain_text(after.value.value)
    named = sorted((name for name in docs if "_" in name), key=len, reverse=True)
    if named:  # a setting the help names is named as its option (memory_limit_gb)
        pattern = re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, named)) + r")(?![\w=(])")
        docs = {name: pattern.sub(lambda m: flag(m.group(1)), doc) for name, doc in docs.items()}
    return docs


@cache
def _class_definitions(module: str) -> dict[str, ast.ClassDef]:
    """The classes defined at the top level of ``module``, by name, from one parse of its
    source (``inspect.getsource`` of a class parses the whole module each time)."""
    source = inspect.getsource(sys.modules[module])
    return {node.name: node for node in ast.parse(source).body
            if isinstance(node, ast.ClassDef)}


def _plain_text(doc: str) -> str:
    """A docstring as one line without reStructuredText markup (:class:`~a.B` -> B)."""
    doc = re.sub(r":\w+:`~?(?:[\w.]*\.)?(\w+)`", r"\1", doc).replace("``", "")
    return " ".join(doc.split())


@dataclass(frozen=True)
class _Kind:
    """What a field's type says about its values."""

    type: type
    optional: bool = False
    sequence: bool = False
    choices: tuple[str, ...] | None = None


@cache
def choices_of(name: str) -> tuple[str, ...] | None:
    """The values the str setting ``name`` takes (read from where :data:`CHOICE_SOURCES`
    says they are defined, when first asked), or None for a free-form setting."""
    source = CHOICE_SOURCES.get(name)
    if source is None:
        return None
    module, attribute = source
    return tuple(getattr(importlib.import_module(module), attribute))


def _kind(cls: type, field: Field) -> _Kind:
    hint = settings_hints(cls)[field.name]
    optional = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        optional = type(None) in args
        if len(args) == 2 and optional:  # X | None
            hint = next(arg for arg in args if arg is not type(None))
        elif str in args and not optional:  # a name, or objects only Python can give
            hint = str
    sequence = typing.get_origin(hint) is tuple
    if sequence:
        hint = typing.get_args(hint)[0]
    choices = choices_of(field.name)
    if typing.get_origin(hint) is Literal:
        choices = tuple(str(arg) for arg in typing.get_args(hint))
        hint = str
    if hint not in (int, float, str, bool) or (hint is bool and (optional or sequence)):
        raise TypeError(f"{cls.__name__}.{field.name}: no command-line option for type "
                        f"{field.type}")
    return _Kind(hint, optional, sequence, choices)


def number(kind: type[int] | type[float], positive: bool = False,
           most: int | None = None) -> Callable[[str], float]:
    """argparse type: a finite ``kind`` at least 0 (above 0 when ``positive``); an integer
    below :data:`~iglearn.hints.INTEGER_LIMIT`, or at most ``most`` (ints only)."""
    bound = _bound(kind, positive, most)
    limit = INTEGER_LIMIT if most is None else most + 1

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and (value > 0 if positive else value >= 0)
                and (kind is float or value < limit)):
            raise argparse.ArgumentTypeError(f"must be {bound}, got {text!r}")
        return value
    return parse


def _bound(kind: type, positive: bool, most: int | None = None) -> str:
    """What a number of ``kind`` must be, as :func:`number` and :func:`typed_value` say it."""
    if kind is not int:
        return "a finite number > 0" if positive else "a finite number >= 0"
    if most is not None:
        return f"an integer in [{1 if positive else 0}, {most}]"
    return f"an integer >= {1 if positive else 0} and below 2**63"


PORTS = 65535
"""The largest TCP port."""


def port_number(text: str) -> int:
    """argparse type: a TCP port, an integer in [0, :data:`PORTS`] (0: any free port)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= PORTS:
        raise argparse.ArgumentTypeError(f"must be a port, an integer in [0, {PORTS}] (0: any "
                                         f"free one), got {text!r}")
    return value


def value_parser(cls: type, name: str) -> Callable[[str], object]:
    """Read one command-line value of field ``name`` of dataclass ``cls``, as its option does;
    raises ``argparse.ArgumentTypeError`` naming what the value must be."""
    kind = _kind(cls, next(f for f in fields(cls) if f.name == name))
    one: Callable[[str], object]
    if kind.choices is not None:
        one = partial(_choice, kind.choices)
    elif kind.type is str:
        one = _text
    else:
        one = number(kind.type, name in POSITIVE, MAXIMA.get(name))

    def parse(text: str) -> object:
        text = text.strip()
        if kind.optional and kind.type is not str and text.lower() == NONE:
            return None
        if kind.sequence:
            return tuple(one(item) for item in items(text))
        if kind.type is str and len(text) > 1 and text[0] == text[-1] == '"':
            quoted = items(text)  # a quoted value keeps its spaces: '" arm"'
            if len(quoted) != 1:
                raise argparse.ArgumentTypeError(f"cannot read {text!r} as one quoted value; "
                                                 f"quote the whole value: '\" arm\"'")
            return one(quoted[0])
        return one(text)
    return parse


_ITEM = re.compile(r'\s*(?:"((?:[^"]|"")*)"\s*|([^",]*))(,|\Z)')
"""One item of a list option's value and the comma after it (none at the end): quoted,
its text between the quotes, or not, its text up to the comma."""


def items(text: str) -> list[str]:
    """The comma-separated items of a list option's value, read as one CSV row: an item
    holding a comma, a quote or spaces at its ends is quoted (``--actions '"left, slow",
    right'``, ``--context '" x"'``), a quote inside quotes doubled; an item not quoted is
    read without the spaces around it."""
    found, start = [], 0
    while (match := _ITEM.match(text, start)) is not None:
        quoted, plain, comma = match.groups()
        found.append(quoted.replace('""', '"') if quoted is not None else plain.strip())
        if not comma:
            return found
        start = match.end()
    raise argparse.ArgumentTypeError(
        f"cannot read {text!r} as comma-separated items: a quote opens no quoted item or is "
        f"never closed; quote an item that holds a comma or starts with a quote, for the "
        f"shell too: '\"left, slow\",right'")


class SettingRefused(ValueError):
    """A value a typed document (TOML, JSON) gives a setting that its field's type refuses:
    ``name`` (dotted for a nested setting: ``optimisation.lr``), the ``value`` and what was
    ``expected``."""

    def __init__(self, name: str, value: object, expected: str, problem: str | None = None):
        super().__init__(problem or f"{name} is {quoted(value)}; expected {expected}")
        self.name, self.value, self.expected = name, value, expected


def typed_value(cls: type, name: str, value: object) -> object:
    """One value of field ``name`` of dataclass ``cls`` as a typed document (a TOML file's
    table, a JSON object) gives it, checked by the rules the field's option applies to
    command-line text (:func:`value_parser`): the type, the choices, every number finite
    and at least 0 (above 0 for :data:`POSITIVE`), an integer below
    :data:`~iglearn.hints.INTEGER_LIMIT` (TOML's 64 bits);
    an ``int`` a whole number (never a ``bool``), a ``float`` also an integer (converted); a
    ``tuple`` a list; a ``dict`` a table. Raises :class:`SettingRefused`."""
    hint = settings_hints(cls)[name]
    if typing.get_origin(hint) is dict or hint is dict:
        if not isinstance(value, dict):
            raise SettingRefused(name, value, "a table")
        return value
    try:
        kind = _kind(cls, next(f for f in fields(cls) if f.name == name))
    except TypeError:
        raise SettingRefused(name, value, "a value only Python can give") from None
    if value is None and kind.optional:
        return None
    if kind.sequence:
        if not isinstance(value, list | tuple):
            raise SettingRefused(name, value, f"a list of {_expected(kind, name)}")
        return tuple(_typed_one(kind, name, item) for item in value)
    return _typed_one(kind, name, value)


def _expected(kind: _Kind, name: str) -> str:
    if kind.choices is not None:
        return f"one of {', '.join(kind.choices)}"
    if kind.type in (int, float):
        return _bound(kind.type, name in POSITIVE, MAXIMA.get(name))
    return {str: "a non-empty string", bool: "true or false"}[kind.type]


def _typed_one(kind: _Kind, name: str, value: object) -> object:
    ok: bool
    if kind.choices is not None:
        ok = isinstance(value, str) and value in kind.choices
    elif kind.type is str:
        ok = isinstance(value, str) and bool(value)
    elif kind.type is bool:
        ok = isinstance(value, bool)
    else:
        number_types = (int,) if kind.type is int else (int, float)
        ok = (isinstance(value, number_types) and not isinstance(value, bool)
              and math.isfinite(value)
              and (isinstance(value, float) or abs(value) < INTEGER_LIMIT)
              and (name not in MAXIMA or value <= MAXIMA[name])
              and (value > 0 if name in POSITIVE else value >= 0))
        if ok and kind.type is float:
            value = float(cast(float, value))
    if not ok:
        raise SettingRefused(name, value, _expected(kind, name))
    return value


def typed_settings(settings: T, values: Mapping[str, object], skip: Collection[str] = ()
                   ) -> T:
    """``settings`` (a dataclass instance) with ``values`` from a typed document in place of
    its values, each checked by :func:`typed_value`; a field that holds a dataclass takes a
    table of its own fields (``optimisation = {epochs = 4}`` changes that one epoch count of
    ``settings``' optimisation). Raises :class:`SettingRefused` for a value or a name that
    is not a field (its message lists the fields, but those in ``skip``)."""
    cls = type(settings)
    names = [f.name for f in fields(cast(Any, settings)) if f.init]
    changes: dict[str, object] = {}
    for name, value in values.items():
        if name not in names:
            known = ", ".join(sorted(set(names) - set(skip)))
            raise SettingRefused(name, value, f"a setting of {cls.__name__} ({known})",
                                 f"{name} is not a setting of {cls.__name__}; its settings "
                                 f"are {known}")
        inner = getattr(settings, name)
        if is_dataclass(inner) and not isinstance(inner, type):
            if not isinstance(value, dict):
                raise SettingRefused(name, value, "a table")
            try:
                changes[name] = typed_settings(inner, value)
            except SettingRefused as e:
                raise SettingRefused(f"{name}.{e.name}", e.value, e.expected,
                                     f"{name}.{e}") from None
        else:
            changes[name] = typed_value(cls, name, value)
    return replace(cast(Any, settings), **changes)


def _choice(choices: tuple[str, ...], text: str) -> str:
    if text not in choices:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(choices)}")
    return text


def _text(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def shown(value: object) -> str:
    """A default as the command line writes it."""
    if value is None:
        return NONE
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(value)


class _Once(argparse.Action):
    """Store an option's value, refusing the option given twice: argparse would keep the last
    silently (``--context age --context clicks`` reading clicks alone)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if hasattr(namespace, self.dest):
            several = (", its values comma-separated (a,b)"
                       if str(self.metavar).endswith("[,...]") else "")
            raise argparse.ArgumentError(self, f"given twice; give it once{several}")
        setattr(namespace, self.dest, values)


def add_settings(parser: argparse.ArgumentParser, settings: Any, key: str, title: str,
                 description: str | None = None, *, skip: Collection[str] = (),
                 aliases: Mapping[str, str] | None = None,
                 shared: Mapping[str, object] | None = None,
                 stated: Mapping[str, str] | None = None) -> argparse._ArgumentGroup:
    """Add one option per field of the dataclass instance ``settings`` (and per field of each
    dataclass it holds) to ``parser``, in an argument group ``title`` (with ``description``).

    Options given on the command line land in the namespace under ``KEY.FIELD`` (nested:
    ``KEY.FIELD.FIELD``) for :func:`build_settings`; options not given leave nothing there.
    ``skip`` names fields that get no option; ``aliases`` maps a field to a second flag.
    ``shared`` names, by label, every settings object (``settings`` among them) whose fields
    of the same names these options also set: where their defaults differ, the help states
    each one's (``(default: 0.1 for igl, 0.5 for ai-igl)``). ``stated`` gives, by field, the
    default the help states instead, for an option whose command decides its default itself.
    Returns the argument group.
    """
    cls: type = type(settings)
    docs = field_docs(cls)
    group = parser.add_argument_group(title, description)
    nested = []
    for field in fields(settings):
        if field.name in skip or not field.init:
            continue
        value = getattr(settings, field.name)
        if is_dataclass(value):
            nested.append((field.name, value))
            continue
        if field.name not in docs:
            raise TypeError(f"{cls.__name__}.{field.name} has no docstring to be its help")
        kind = _kind(cls, field)
        flags = [flag(field.name)]
        if aliases and field.name in aliases:
            flags.append(aliases[field.name])
        default = (stated or {}).get(field.name) or _defaults(field.name, value, shared)
        text = f"{docs[field.name]} (default: {default})"
        text = text.replace("%", "%%")
        dest = f"{key}.{field.name}"
        if kind.type is bool:
            group.add_argument(*flags, dest=dest, action=argparse.BooleanOptionalAction,
                               default=argparse.SUPPRESS, help=text)
            continue
        metavar = "{" + ",".join(kind.choices) + "}" if kind.choices else field.name.upper()
        group.add_argument(*flags, dest=dest, type=value_parser(cls, field.name),
                           action=_Once, default=argparse.SUPPRESS, help=text,
                           metavar=f"{metavar}[,...]" if kind.sequence else metavar)
    for name, value in nested:
        inner = ({label: getattr(other, name) for label, other in shared.items()}
                 if shared else None)
        add_settings(parser, value, f"{key}.{name}", f"{title}: {name}", docs[name],
                     shared=inner)
    return group


def _defaults(name: str, value: object, shared: Mapping[str, object] | None) -> str:
    """The default of field ``name`` as its help states it: ``value``, or, when the settings
    objects in ``shared`` that have the field differ there, each one's value with its
    label."""
    values = {label: shown(getattr(other, name)) for label, other in (shared or {}).items()
              if hasattr(other, name)}
    if len(set(values.values())) <= 1:
        return shown(value)
    return ", ".join(f"{text} for {label}" for label, text in values.items())


def build_settings(args: argparse.Namespace, settings: T, key: str) -> T:
    """``settings`` with the options given on the command line (as :func:`add_settings` added
    them under ``key``) in place of its values."""
    given = {dest[len(key) + 1:]: value for dest, value in vars(args).items()
             if dest.startswith(key + ".")}
    try:
        return _with(settings, given)
    except IGLearnError as e:
        raise IGLearnError(as_option(str(e), [path.rpartition(".")[2] for path in given])
                           ) from None


def as_option(message: str, names: Sequence[str]) -> str:
    """A settings class's message about one of its fields (``threads must be ...``,
    ``column mapping: n_actions is 0; ...``) as the command line's option names it
    (``--threads: must be ...``, ``--n-actions is 0; ...``), when it is about one of
    ``names``; any other message as it is."""
    for name in names:
        for prefix, rest in ((f"{name} must be ", "must be "),
                             (f"column mapping: {name} ", "")):
            if message.startswith(prefix):
                joiner = ": " if rest else " "
                return f"{flag(name)}{joiner}{rest}{message[len(prefix):]}"
    return message


def _with(settings: T, given: dict[str, object]) -> T:
    changes: dict[str, object] = {}
    nested: dict[str, dict[str, object]] = {}
    for path, value in given.items():
        name, dot, rest = path.partition(".")
        if dot:
            nested.setdefault(name, {})[rest] = value
        else:
            changes[name] = value
    for name, inner in nested.items():
        changes[name] = _with(getattr(settings, name), inner)
    return replace(cast(Any, settings), **changes)  # a dataclass instance


class HelpFormatter(argparse.HelpFormatter):
    """Help that states the default of every option that takes a value (generated options
    state theirs in their text)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("(default" in text or action.default in (None, argparse.SUPPRESS)
                or action.required or action.nargs == 0 or not action.option_strings):
            return text
        return f"{text} (default: {shown(action.default)})"
