"""Vowpal Wabbit's DSJSON, one JSON object per line, as ``vw --dsjson --cb_explore_adf
--experimental_igl --coin`` reads it::

    {"_label_cost": 0, "_label_probability": 0.1, "_label_Action": 4, "_labelIndex": 3,
     "o": [{"y": {"y0": 0.5, "y7": 1}}], "a": [4, 1, 2, ...], "p": [0.1],
     "c": {"x": {"x0": 0.25, "x3": 1}, "_multi": [{"a": {"a0": 1}}, ..., {"a": {"a9": 1}}]},
     "_iglearn": {"reward": 1, "label": 3}}

- the logged action is ``_labelIndex`` (0-based index into ``c._multi``; else
  ``_label_Action`` - 1) and its probability ``_label_probability``. VW places the label by
  ``_labelIndex`` and its logs write ``_label_Action`` = ``_labelIndex`` + 1; a line on which
  the two disagree is refused, since the actions are read as positions of ``c._multi`` in the
  same order on every line;
- context features are the namespaces of ``c`` other than ``_multi``; feedback features the
  namespaces of the objects in ``o`` (a feature in several objects, several outcome events
  of one decision, is their sum, as VW adds a feature given twice). A feature
  ``{"ns": {"name": value}}`` is called ``ns^name``; a string value
  ``{"ns": {"name": "text"}}`` is the feature ``ns^nametext``
  with value 1, as in VW. Absent features are 0;
- K is the length of ``c._multi``, and an action its position there: every line lists the
  same actions in the same order (a line that reorders them, or whose action features
  differ, is refused: the features of ``c._multi`` are not read);
- ``"_definitely_bad": true`` inside an object of ``o`` flags an unmistakably negative
  feedback (the field ``definitely_bad``, read by IGL-P), as in VW's ``--experimental_igl``
  logs; as in VW, the flag is optional (a line without it is not flagged). VW's own IGL
  lines (``"o": [{"v": {"v=click": 1}, "_definitely_bad": false}]``, named actions in
  ``c._multi``) read as they are;
- the keys ``EventId`` and ``ActionTaken`` of an object of ``o`` (VW's joined outcome
  events) are not feedback and are not read (:data:`OUTCOME_BOOKKEEPING`);
- a line with ``"_skipLearn": true`` (an event VW's joiner marks unfit to learn from, such as
  a deferred action that was never activated) is not read into a log, as VW does not learn
  from it; the reader warns once with their count (:attr:`DsjsonReader.skipped`). Contexts
  to predict on are read from every line;
- a contextual-bandit log's ``_label_cost`` (VW's cost of the logged action) is read as the
  latent reward, its negative, for evaluation only (``value_ips``), when some line's cost is
  not 0, all lie in [-1, 1] and no line has ``_iglearn``'s reward; an IGL log leaves it 0,
  the reward hidden, and iglearn writes 0;
- ``_iglearn`` holds the latent reward and the correct action, for evaluation only (VW
  ignores it).

Labels and ``o`` are written before ``c`` because VW's parser needs them first. Feature names
map to vector positions by a :class:`FeatureSchema` kept beside the data in
``<file>.schema.json``; without one, the reader builds it from the names in the file, in order
of first appearance, except that a section whose names are one numbered family (``x^x0``,
``x^x1``, ... as iglearn and the service write them) is ordered by number, so a log whose
first lines leave some features out (zeros are not written) is read in its columns' order.
The writer writes every feature of the first line, zeros included, so that the order and
the width of the columns are in the file even without its sidecar.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import numpy as np

from iglearn.data import limits, safejson
from iglearn.data.formats.base import (
    BATCH_ROWS,
    MATRIX_FIELDS,
    FeatureSchema,
    TableInfo,
    TableReader,
    check_n_actions,
    check_table_size,
    required_fields,
)
from iglearn.data.logs import Places, field_values
from iglearn.errors import IGLearnError, shown, warn_caller
from iglearn.files import input_file

SCHEMA_FORMAT = "iglearn-dsjson-schema"


def schema_path(path: Path) -> Path:
    """The sidecar schema of a DSJSON file: ``<file>.schema.json``."""
    return path.with_name(path.name + ".schema.json")


class DsjsonReader(TableReader):
    """Reads a ``.dsjson`` log or context set line by line.

    Args:
        path: the file.
        schema: feature positions to use (a model's, say); else the sidecar, else inferred.
        skip_learn: leave out the lines marked ``"_skipLearn": true`` (reading a log to
            learn from or evaluate); False reads them too (contexts to predict on: one
            prediction per line).
    """

    def __init__(self, path: Path, schema: FeatureSchema | None = None,
                 skip_learn: bool = True):
        self.path = path
        self._skip_learn = skip_learn
        source = str(path)
        sidecar = schema_path(path)
        size = input_file(path)
        n_actions = None
        self._given = schema is not None  # a model's: a feature it lacks is read as 0
        self._told = False
        self.skipped = 0
        """How many lines ``"_skipLearn": true`` left out of the log."""
        if schema is None and sidecar.exists():
            size += input_file(sidecar, "feature schema")
            record = safejson.read(sidecar, "restore it or write the log again",
                                   "feature schema")
            schema = FeatureSchema.from_json(record, str(sidecar))
            record = cast(dict, record)  # from_json refused anything but a dict
            if record.get("n_actions") is not None:
                n_actions = check_n_actions(record["n_actions"], str(sidecar))
        self._fixed = schema is not None
        names: dict[str, dict[str, None]] = {"context": {}, "feedback": {}}
        seen: set[str] = set()
        flags = False  # some line has '_definitely_bad' (optional: absent is false)
        costs = 0.0  # the largest |_label_cost| (a contextual-bandit log's costs)
        n = 0
        first_actions: tuple[int, list] | None = None  # the first line's c._multi
        for line_no, record in self._records():
            present = _present(record)
            flags = flags or _has_flag(record)
            costs = max(costs, abs(_cost(record)))
            if n and present != seen:
                gone = sorted(seen - present)
                if gone:
                    problem = f"missing {_describe(gone[0])}, which"
                else:
                    problem = f"has {_describe(sorted(present - seen)[0])}, which none of"
                fix = ("; a line with no reaction writes \"o\": []" if gone == ["feedback"]
                       else " (a label on all lines or on none)")
                raise IGLearnError(
                    f"{source}, line {line_no}: {problem} the lines before it have; every "
                    f"line needs the same fields{fix}")
            seen = present
            k = _n_actions(record, source, line_no)
            if k is not None:
                if first_actions is None:
                    first_actions = (line_no, record["c"]["_multi"])
                elif record["c"]["_multi"] != first_actions[1]:
                    _same_actions(record["c"]["_multi"], *first_actions, source, line_no)
            if n_actions is None:
                n_actions = k
            elif k is not None and k != n_actions:
                raise IGLearnError(f"{source}, line {line_no}: c._multi lists {k} actions but "
                                   f"K is {n_actions}; every line needs the same actions")
            if not self._fixed:
                for key in _features(record["c"], "c", source, line_no):
                    names["context"].setdefault(key)
                for key in _feedback_features(record, source, line_no):
                    names["feedback"].setdefault(key)
            n += 1
        if n == 0 and self.skipped:
            raise IGLearnError(f"{source}: every line has \"_skipLearn\": true, so none is "
                               f"read (events not to learn from); export the log again "
                               f"with the events that were activated")
        if n == 0:
            raise IGLearnError(f"{source}: the file is empty (no JSON lines); write the log "
                               f"again")
        if self.skipped:
            warn_caller(f"{source}: {self.skipped} of {n + self.skipped} lines have "
                        f"\"_skipLearn\": true (events not to learn from, such as deferred "
                        f"actions never activated) and are not read, as Vowpal Wabbit does "
                        f"not learn from them")
        if n_actions is None:
            raise IGLearnError(f"{source}: no line lists the actions (c._multi) and there is "
                               f"no {sidecar.name} giving n_actions; add either")
        logged = [name for name in ("action", "probability", "feedback") if name in seen]
        if logged and len(logged) < 3:
            missing = next(x for x in ("action", "probability", "feedback") if x not in seen)
            raise IGLearnError(f"{source}: no line has {_describe(missing)}; every line of a "
                               f"log needs the label, its probability and the feedback 'o'")
        self._costs = False  # the reward is read from _label_cost (its negative)
        if costs and "reward" not in seen and "action" in seen:
            if costs <= 1.0:
                self._costs = True
                seen.add("reward")
            else:
                warn_caller(f"{source}: _label_cost reaches {costs:g}, so it is not read as "
                            f"the (latent) reward, which lies in [-1, 1]: scale the costs "
                            f"into [-1, 1] to evaluate on them")
        if flags and "feedback" in seen:
            seen.add("definitely_bad")
        fields = required_fields(seen, source)
        if schema is None:
            schema = FeatureSchema(_numbered(tuple(names["context"])),
                                   _numbered(tuple(names["feedback"])))
        if not schema.context:
            raise IGLearnError(f"{source}: no context features found; put them in 'c'")
        if "feedback" in fields and not schema.feedback:
            raise IGLearnError(f"{source}: no feedback features found; put them in 'o'")
        dims = {name: len(getattr(schema, name)) for name in MATRIX_FIELDS if name in fields}
        self.info = TableInfo(source, n, n_actions, fields, dims, schema)
        check_table_size(self.info, size)
        self._index = {name: {key: i for i, key in enumerate(getattr(schema, name))}
                       for name in MATRIX_FIELDS}

    def _records(self) -> Iterator[tuple[int, dict]]:
        """The lines to read, numbered from 1: each a JSON object with a 'c', those with
        ``"_skipLearn": true`` counted in :attr:`skipped` and left out."""
        limit = limits.MAX_JSON_BYTES
        self.skipped = 0
        try:
            with open(self.path, "rb") as f:
                for line_no in itertools.count(1):
                    line = f.readline(limit + 1)
                    if not line:
                        break
                    if len(line) > limit:
                        raise IGLearnError(f"{self.path}, line {line_no}: longer than {limit} "
                                           f"bytes (iglearn.data.limits.MAX_JSON_BYTES); the "
                                           f"file is corrupt or not DSJSON")
                    if not line.strip():
                        continue
                    record = safejson.parse(line, f"{self.path}, line {line_no}",
                                            "fix or remove the line")
                    if not isinstance(record, dict) or not isinstance(record.get("c"), dict):
                        raise IGLearnError(f"{self.path}, line {line_no}: missing field 'c' "
                                           f"(the context features); every line needs one")
                    if _skip_learn(record, str(self.path), line_no) and self._skip_learn:
                        self.skipped += 1
                        continue
                    yield line_no, record
        except PermissionError:
            raise IGLearnError(f"{self.path}: cannot read the file (permission denied); check "
                               f"its permissions") from None

    def batches(self, rows: int = BATCH_ROWS, fields: tuple[str, ...] | None = None
                ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        info = self.info
        start = 0
        buffer: list[tuple[int, dict]] = []
        for item in self._records():
            buffer.append(item)
            if len(buffer) == rows:
                yield start, self._batch(buffer)
                start += len(buffer)
                buffer = []
        if buffer:
            yield start, self._batch(buffer)
            start += len(buffer)
        if start != info.n_rows:
            raise IGLearnError(f"{self.path}: changed while being read; read it again")

    def _batch(self, records: list[tuple[int, dict]]) -> dict[str, np.ndarray]:
        info = self.info
        n = len(records)
        out: dict[str, np.ndarray] = {}
        for name in MATRIX_FIELDS:
            if name in info.fields:
                out[name] = np.zeros((n, info.dims[name]), dtype=np.float32)
        for name, dtype in (("action", np.int64), ("probability", np.float64),
                            ("reward", np.float64), ("label", np.int64),
                            ("definitely_bad", np.bool_)):
            if name in info.fields:
                out[name] = np.zeros(n, dtype=dtype)
        for row, (line_no, record) in enumerate(records):
            self._fill(out["context"][row], "context",
                       _features(record["c"], "c", info.source, line_no), line_no)
            if "feedback" in out:
                self._fill(out["feedback"][row], "feedback",
                           _feedback_features(record, info.source, line_no), line_no)
                out["action"][row] = _label_index(record, info.n_actions, info.source, line_no)
                out["probability"][row] = _number(record, "_label_probability", info.source,
                                                  line_no)
            if "definitely_bad" in out:
                out["definitely_bad"][row] = _definitely_bad(record, info.source, line_no)
            extra = record.get("_iglearn", {})
            if "reward" in out:
                out["reward"][row] = (0.0 - _cost(record) if self._costs else
                                      _number(extra, "reward", info.source, line_no,
                                              where="_iglearn."))
            if "label" in out:
                value = _number(extra, "label", info.source, line_no, where="_iglearn.")
                out["label"][row] = _action(value, 0, "_iglearn.label", info.n_actions,
                                            info.source, line_no)
        lines = [line_no for line_no, _ in records]
        on_lines = Places("line", lambda row: lines[row])
        for name in ("probability", "reward"):  # their bounds, each value named by its line
            if name in out:
                field_values(name, out[name], info.source, places=on_lines)
        return out

    def _fill(self, row: np.ndarray, name: str, features: dict[str, float],
              line_no: int) -> None:
        index = self._index[name]
        for key, value in features.items():
            position = index.get(key)
            if position is None:
                if not self._given:  # the file's own sidecar disagrees with it
                    raise IGLearnError(
                        f"{self.path}, line {line_no}: {name} feature {shown(key)} is not in "
                        f"the feature schema beside the file ({schema_path(self.path).name}), "
                        f"which is another log's: delete it to read the file's own features "
                        f"(or restore the one written with this log)")
                if not self._told:
                    self._told = True
                    warn_caller(f"{self.path}, line {line_no}: {name} feature {shown(key)} "
                                f"is not among the features of the schema given (a model's); "
                                f"it and every other such feature are read as 0, as Vowpal "
                                f"Wabbit reads a feature it has no weight for (a new user, a "
                                f"new word): refit on a log that has them to use them")
                continue
            row[position] = value


def _skip_learn(record: dict, source: str, line_no: int) -> bool:
    """Whether the line is marked ``"_skipLearn": true`` (absent: false)."""
    value = record.get("_skipLearn", False)
    if not isinstance(value, bool):
        raise IGLearnError(f"{source}, line {line_no}: \"_skipLearn\" is {shown(value)}; write "
                           f"true or false (true: the line is not learnt from)")
    return value


def _cost(record: dict) -> float:
    """A line's ``_label_cost`` (0 when absent or not a number: IGL logs leave it 0, the
    reward hidden)."""
    value = record.get("_label_cost", 0)
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return 0.0
    return float(value)


def _present(record: dict) -> set[str]:
    present = {"context"}
    if "_labelIndex" in record or "_label_Action" in record:
        present.add("action")
    if "_label_probability" in record:
        present.add("probability")
    if "o" in record:
        present.add("feedback")
    extra = record.get("_iglearn")
    if isinstance(extra, dict):
        present.update(name for name in ("reward", "label") if name in extra)
    return present


def _has_flag(record: dict) -> bool:
    """Whether a feedback object of the line holds ``_definitely_bad`` (true or false)."""
    observations = record.get("o")
    observations = observations if isinstance(observations, list) else [observations]
    return any(isinstance(o, dict) and "_definitely_bad" in o for o in observations)


def _describe(name: str) -> str:
    return {"action": "the label ('_labelIndex')", "probability": "'_label_probability'",
            "feedback": "the feedback 'o'", "reward": "'_iglearn.reward'",
            "label": "'_iglearn.label'"}.get(name, name)


def _same_actions(multi: list, first_line: int, first: list, source: str,
                  line_no: int) -> None:
    """Refuse a line whose ``c._multi`` differs from the first line's: iglearn reads an
    action as its position in ``c._multi`` and not its features, so a line listing the
    actions in another order (VW's ADF logs may) would be read as other actions, and
    features that change from line to line would be dropped without a word. The message
    tells a reordering from other features."""
    if len(multi) != len(first):
        return  # told as a different K by the caller
    texts = [json.dumps(entry, sort_keys=True) for entry in multi]
    first_texts = [json.dumps(entry, sort_keys=True) for entry in first]
    i = next(i for i, (a, b) in enumerate(zip(texts, first_texts, strict=True)) if a != b)
    if sorted(texts) == sorted(first_texts):
        raise IGLearnError(
            f"{source}, line {line_no}: c._multi lists the actions in another order than "
            f"line {first_line} (position {i} is {shown(multi[i])}, there {shown(first[i])}); "
            f"iglearn reads an action as its position in c._multi: write the actions in one "
            f"order on every line, the label's _labelIndex their position in it")
    raise IGLearnError(
        f"{source}, line {line_no}: c._multi's action {i} is {shown(multi[i])}, on line "
        f"{first_line} {shown(first[i])}; iglearn reads an action as its position in "
        f"c._multi and does not read action features: write the same actions, in the same "
        f"order, on every line (features that change per line belong in the context)")


def _n_actions(record: dict, source: str, line_no: int) -> int | None:
    multi = record["c"].get("_multi")
    if multi is None:
        return None
    if not isinstance(multi, list):
        raise IGLearnError(f"{source}, line {line_no}: field 'c._multi' must be a list with "
                           f"one entry per action")
    return len(multi)


def _scalar(value: object, key: str, source: str, line_no: int) -> float:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        if abs(value) > limits.MAX_ABS_VALUE:
            raise IGLearnError(f"{source}, line {line_no}: feature {shown(key)} is "
                               f"{shown(value)}, beyond ±{limits.MAX_ABS_VALUE:g}; "
                               f"{limits.TOO_LARGE_FIX}")
        return float(value)
    text = json.dumps(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    fix = ""
    if isinstance(value, list | dict):  # VW's dense arrays and nested objects: name each value
        base = key.split(".")[-1]
        named = ({f"{base}{i}": v for i, v in enumerate(value[:2])} if isinstance(value, list)
                 else {f"{base}_{k}": v for k, v in list(value.items())[:2]})
        fix = (f"; give each value a feature name of its own ({json.dumps(named)[:-1]}, ...}}: "
               f"dense arrays and nested objects are not read)")
    raise IGLearnError(f"{source}, line {line_no}: feature {shown(key)} has value "
                       f"{shown(text)}; expected a number, a boolean or a string{fix}")


def _features(namespaces: object, where: str, source: str, line_no: int) -> dict[str, float]:
    """Named features of a VW JSON object: ``{"ns": {"name": value}}`` -> ``ns^name``."""
    if not isinstance(namespaces, dict):
        raise IGLearnError(f"{source}, line {line_no}: field '{where}' must be an object of "
                           f"namespaces")
    out: dict[str, float] = {}
    for ns, content in namespaces.items():
        if ns.startswith("_"):
            continue
        items = content.items() if isinstance(content, dict) else [(ns, content)]
        prefix = ns if isinstance(content, dict) else ""
        for name, value in items:
            if name.startswith("_"):
                continue
            if isinstance(value, str):
                out[f"{prefix}^{name}{value}"] = 1.0
            else:
                out[f"{prefix}^{name}"] = _scalar(value, f"{where}.{ns}.{name}", source,
                                                  line_no)
    return out


def _feedback_features(record: dict, source: str, line_no: int) -> dict[str, float]:
    observations = record.get("o")
    if observations is None:
        return {}
    if isinstance(observations, dict):
        observations = [observations]
    if not isinstance(observations, list):
        raise IGLearnError(f"{source}, line {line_no}: field 'o' must be a list of feedback "
                           f"objects such as [{{\"v\": {{\"v=click\": 1}}}}]")
    out: dict[str, float] = {}
    for observation in observations:
        if isinstance(observation, dict) and OUTCOME_BOOKKEEPING & observation.keys():
            observation = {key: value for key, value in observation.items()
                           if key not in OUTCOME_BOOKKEEPING}
        for key, value in _features(observation, "o", source, line_no).items():
            out[key] = out.get(key, 0.0) + value  # several events of one feature add up
    return out


OUTCOME_BOOKKEEPING = frozenset({"EventId", "ActionTaken"})
"""Keys of VW's joined outcome events (``"o": [{"v": 1, "EventId": "...", "ActionTaken":
false}]``) that identify the event, not the feedback: not read as features (an event id read
as one would be a feature of its own line alone)."""


def _definitely_bad(record: dict, source: str, line_no: int) -> bool:
    """Whether any feedback object of the line is flagged ``"_definitely_bad": true``."""
    observations = record["o"] if isinstance(record["o"], list) else [record["o"]]
    flagged = False
    for observation in observations:
        value = observation.get("_definitely_bad", False) if isinstance(observation,
                                                                         dict) else False
        if not isinstance(value, bool):
            raise IGLearnError(f"{source}, line {line_no}: field 'o._definitely_bad' is "
                               f"{shown(value)}; expected true or false")
        flagged = flagged or value
    return flagged


def _number(record: object, key: str, source: str, line_no: int, where: str = ""
            ) -> int | float:
    value = record.get(key) if isinstance(record, dict) else None
    if value is None:
        raise IGLearnError(f"{source}, line {line_no}: missing field '{where}{key}'; every line "
                           f"needs it")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise IGLearnError(f"{source}, line {line_no}: field '{where}{key}' is {shown(value)}; "
                           f"expected a number")
    return value


def _action(value: int | float, shift: int, key: str, n_actions: int, source: str,
            line_no: int) -> int:
    """``value - shift`` as an action in [0, n_actions), or an error showing ``value``."""
    if value != int(value):
        raise IGLearnError(f"{source}, line {line_no}: field '{key}' is {shown(value)}; actions "
                           f"must be integers")
    if not 0 <= value - shift < n_actions:
        raise IGLearnError(f"{source}, line {line_no}: field '{key}' is {shown(value)}, outside "
                           f"[{shift}, {n_actions + shift}); fix the value or set n_actions to "
                           f"the true number of actions")
    return int(value) - shift


def _label_index(record: dict, n_actions: int, source: str, line_no: int) -> int:
    """The logged action: ``_labelIndex``, else ``_label_Action`` - 1; a line that holds both
    and on which they disagree is refused."""
    if "_labelIndex" in record:
        action = _action(_number(record, "_labelIndex", source, line_no), 0, "_labelIndex",
                         n_actions, source, line_no)
        if "_label_Action" in record:
            other = _number(record, "_label_Action", source, line_no)
            if other != action + 1:
                raise IGLearnError(
                    f"{source}, line {line_no}: '_labelIndex' is {action} but '_label_Action' "
                    f"is {shown(other)}; both name the logged action, _labelIndex as its "
                    f"0-based position in c._multi, _label_Action as _labelIndex + 1, with "
                    f"c._multi in the same order on every line: write them so, or keep only "
                    f"one of them")
        return action
    if "_label_Action" in record:
        return _action(_number(record, "_label_Action", source, line_no), 1, "_label_Action",
                       n_actions, source, line_no)
    raise IGLearnError(f"{source}, line {line_no}: missing label '_labelIndex' (the logged "
                       f"action); every line of a log needs it")


def _value(v: float) -> float | int:
    """The number whose shortest text reads back as the same float32 (``37.05`` for the
    float32 nearest 37.05, whose nine digits are 37.0499992): numpy's shortest repr of a
    float32, which JSON then writes as it is."""
    if v == int(v) and abs(v) < 2**24:
        return int(v)
    return float(str(np.float32(v)))


NUMBERED = re.compile(r"(.*?)(\d+)")
"""A feature name of a numbered family: its stem and its number (``x^x12``: ``x^x``, 12)."""


def _numbered(names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` (in order of first appearance) ordered by number when they are all one
    numbered family (``x^x0``, ``x^x1``, ...: positional names, written sparsely, first
    appear in another order); any other names as they are."""
    matches = [NUMBERED.fullmatch(name) for name in names]
    numbered = [(m[1], int(m[2]), m[0]) for m in matches if m is not None]
    if not names or len(numbered) < len(names) or len({stem for stem, _, _ in numbered}) > 1:
        return names
    return tuple(name for _, _, name in sorted(numbered))


def _namespaces(names: tuple[str, ...], vector: np.ndarray, dense: bool = False
                ) -> dict[str, dict[str, float]]:
    """The features of ``vector`` by namespace: those not 0, or with ``dense`` all."""
    out: dict[str, dict[str, float]] = {}
    for i in range(len(vector)) if dense else np.flatnonzero(vector):
        ns, _, name = names[i].partition("^")
        out.setdefault(ns, {})[name] = _value(float(vector[i]))
    return out


def write_dsjson(reader: TableReader, tmp: Path, schema_tmp: Path) -> None:
    """Write ``reader``'s table as DSJSON to ``tmp`` and its feature schema to ``schema_tmp``."""
    info = reader.info
    schema = info.schema
    if schema is None or len(schema.context) != info.dims["context"] or (
            "feedback" in info.dims and len(schema.feedback) != info.dims["feedback"]):
        schema = FeatureSchema.default(info.dims["context"], info.dims.get("feedback", 0))
    k = info.n_actions
    multi = [{"a": {f"a{i}": 1}} for i in range(k)]
    first = True  # the first line names every feature, in the schema's order
    with open(tmp, "w", encoding="utf-8") as f:
        for _, batch in reader.validated_batches():
            for row in range(len(batch["context"])):
                record: dict[str, object] = {}
                if info.is_log:
                    action = int(batch["action"][row])
                    probability = float(batch["probability"][row])
                    observation: dict[str, object] = {
                        **_namespaces(schema.feedback, batch["feedback"][row], first)}
                    if "definitely_bad" in batch:
                        observation["_definitely_bad"] = bool(batch["definitely_bad"][row])
                    record.update({
                        "_label_cost": 0, "_label_probability": probability,
                        "_label_Action": action + 1, "_labelIndex": action,
                        "o": [observation],
                        "a": [action + 1] + [i + 1 for i in range(k) if i != action],
                        "p": [probability],
                    })
                context = _namespaces(schema.context, batch["context"][row], first)
                first = False
                record["c"] = {**context, "_multi": multi}
                extra = {}
                if "reward" in batch:
                    extra["reward"] = _value(float(batch["reward"][row]))
                if "label" in batch:
                    extra["label"] = int(batch["label"][row])
                if extra:
                    record["_iglearn"] = extra
                f.write(json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n")
    sidecar = {"format": SCHEMA_FORMAT, "n_actions": k, **schema.to_json()}
    schema_tmp.write_text(json.dumps(sidecar, indent=1) + "\n")
