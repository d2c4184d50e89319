"""Commands on people's own interaction logs: fit, evaluate, predict, simulate, convert.

Each prints a JSON summary on stdout: strict JSON, in which a number that is not finite (NaN,
an infinity) is null. Bad input raises :class:`IGLearnError` before any output file or folder
is created, and no output may overlap an input (:mod:`iglearn.cli.paths`).
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from iglearn.cli.paths import check_model_output, check_paths, with_sidecar
from iglearn.cli.settings import add_settings, build_settings, flag, number
from iglearn.data import safejson
from iglearn.data.contexts import ContextSet
from iglearn.data.frames import ColumnMapping, given_fields_read, in_model_order
from iglearn.data.logs import InteractionLog, rows_fingerprint, rows_sketch, training_share
from iglearn.data.stream import LogStream, StreamSettings
from iglearn.errors import DriftWarning, IGLearnError
from iglearn.learners.distributed import RayTrain
from iglearn.theory import DEFAULT_IOTA

if TYPE_CHECKING:
    from iglearn.data.formats.base import FeatureSchema, TableInfo, TableReader
    from iglearn.data.scaling import Standardiser
    from iglearn.learners.ai_igl import AIIGL
    from iglearn.learners.batch_igl import BatchIGL
    from iglearn.learners.iglp import IGLP
    from iglearn.learners.settings import (
        AIIGLSettings,
        BatchIGLSettings,
        IGLPSettings,
        VIIGLSettings,
    )
    from iglearn.learners.vi_igl import VIIGL

LEARNER = "learner"
STREAM = "stream"
BACKEND = "backend_settings"
# The objectives `iglearn fit --algorithm igl` starts from (:func:`objectives`).
OBJECTIVES = ("iglearn", "paper")
# Options of `fit` that only --algorithm igl reads (Eq. 9 and Lemma 5 hold under the 2021
# assumption), by namespace name.
IGL_ONLY = ("objective", "iota", "v_bad")


@dataclass(frozen=True)
class Placement:
    """Where a loaded model computes (``predict``, ``evaluate``)."""

    device: str = "cpu"
    """Where the model computes: cpu, cuda, mps, or auto (CUDA, else MPS, else the CPU); the
    contexts move there 65536 at a time."""
    threads: int = 1
    """Torch threads of the computation (more help large inputs only)."""

    def __post_init__(self) -> None:
        from iglearn.threads import check_threads

        check_threads(self.threads)  # named as its option when the options are read


PLACEMENT = "placement"
COLUMNS = "columns"


def _columns(args: argparse.Namespace, base: ColumnMapping | None = None
             ) -> ColumnMapping | None:
    """The column mapping the column options given (``--context``, ``--action``, ...) make of
    ``base`` (default: iglearn's layout), or None when none is given."""
    given = [dest[len(COLUMNS) + 1:] for dest in vars(args) if dest.startswith(COLUMNS + ".")]
    if not given:
        return None
    mapping = given_fields_read(build_settings(args, base or ColumnMapping(), COLUMNS), given)
    return mapping if base is None else in_model_order(base, mapping, given)


def _add_columns(parser: argparse.ArgumentParser, description: str,
                 skip: tuple[str, ...] = ()) -> None:
    add_settings(parser, ColumnMapping(), COLUMNS, "columns of a .csv or .parquet file",
                 description, skip=skip)


def _setting_names(settings: Any) -> set[str]:
    return {f.name for f in fields(settings) if f.init and f.name != "seed"}


def objectives() -> dict[str, Callable[..., BatchIGL]]:
    """Where `iglearn fit --algorithm igl` starts from: iglearn's settings, or the paper's
    objective plainly."""
    from iglearn.learners.batch_igl import BatchIGL

    return {"iglearn": BatchIGL, "paper": BatchIGL.paper}


@cache
def algorithm_defaults() -> dict[str, BatchIGLSettings | AIIGLSettings | IGLPSettings
                                 | VIIGLSettings]:
    """The default settings of the learner of each `iglearn fit --algorithm` (the algorithms
    a model folder may hold), read from the settings classes the learners inherit, which
    import no torch."""
    from iglearn.learners.settings import ALGORITHM_SETTINGS

    return {name: settings() for name, settings in ALGORITHM_SETTINGS.items()}


def shared_settings() -> tuple[set[str], set[str]]:
    """The settings every algorithm has (one option sets whichever runs), and those igl and
    ai-igl share (their decoders, restarts, ...) that igl-p has not."""
    defaults = algorithm_defaults()
    shared = set.intersection(*map(_setting_names, defaults.values()))
    decoding = (_setting_names(defaults["igl"]) & _setting_names(defaults["ai-igl"])) - shared
    return shared, decoding


def _print(record: dict) -> None:
    print(safejson.dumps(record, indent=2))


def _print_summary(record: dict) -> None:
    """``record`` as strict JSON, one top-level key per line (a nested value stays on its
    key's line), so that a summary is as many lines as it has keys."""
    lines = [f"  {safejson.dumps(key)}: {safejson.dumps(value)}"
             for key, value in cast(dict, safejson.ready(record)).items()]
    print("{\n" + ",\n".join(lines) + "\n}")


def _outlying_columns(standardiser: Standardiser | None, schema: FeatureSchema | None
                      ) -> dict[str, list[str | int]]:
    """The columns of each block that a few far values dominated, scaled by their quartiles
    (:func:`~iglearn.data.scaling.outlying_columns`), by the log's names where it has them
    (a table's column as it is named, without the empty namespace of ``^name``), else by
    their numbers; only the blocks that have some."""
    if standardiser is None:
        return {}
    found: dict[str, list[str | int]] = {}
    for block in ("context", "feedback"):
        columns = getattr(standardiser, f"{block}_outlying")
        names = getattr(schema, block, ()) if schema is not None else ()
        if columns:
            found[block] = [names[c].removeprefix("^") if c < len(names) else c
                            for c in columns]
    return found


def unit_value(text: str) -> float:
    """argparse type: a value, a number in [0, 1]."""
    value = number(float)(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be a value in [0, 1], got {text!r}")
    return value


def _fit(args: argparse.Namespace) -> int:
    """``iglearn fit``. The options, the paths and the log are checked before anything imports
    torch (a second or more): a missing file, a bad column or a log too small is told at
    once."""
    from iglearn.data.formats import open_table
    from iglearn.data.limits import check_fit_size
    from iglearn.data.stream import log_from
    from iglearn.files import fingerprint, output_folder, write_text

    out = Path(args.out)
    _check_options(args)
    in_memory = args.algorithm == "igl-p"  # IGL-P fits a log in memory (regression.fit_model)
    reading = build_settings(args, StreamSettings(), STREAM)
    if in_memory:
        if reading.stream == "on":
            raise IGLearnError("--stream on: --algorithm igl-p fits a log in memory, never "
                               "streamed; use --stream off")
        if reading.reader == "ray":
            raise IGLearnError("--reader ray: --algorithm igl-p fits a log in memory, never "
                               "streamed, so Ray does not read it; drop --reader ray")
        reading = replace(reading, stream="off")
    buffers = [name for name in ("shuffle_rows", "block_rows") if f"{STREAM}.{name}" in vars(args)]
    if buffers and reading.stream == "off":  # given, and never read: told, not ignored
        why = ("--algorithm igl-p fits a log in memory" if in_memory
               else "--stream off reads the log into memory")
        raise IGLearnError(f"{flag(buffers[0])}: {why}, where no stream reads blocks or "
                           f"shuffles rows through a buffer; drop {flag(buffers[0])}")
    backend = _backend(args, reading)
    if backend is not None:
        reading = replace(reading, stream="on")
    history = None if args.history is None else Path(args.history)
    if history is not None and args.algorithm != "igl":
        raise IGLearnError(f"--history: --algorithm {args.algorithm} records no per-epoch "
                           f"history (only --algorithm igl does); drop --history")
    check_paths(with_sidecar("LOG", args.log),
                [("--out", out), *([("--history", history)] if history else [])])
    check_model_output(out)
    log = log_from(open_table(args.log, columns=_columns(args)), reading, _watched(args))
    check_fit_size([log])

    from iglearn.devices import resolve_device
    from iglearn.learners.batch_igl import BatchIGL, IdentifiabilityWarning
    from iglearn.learners.registry import save_model

    learner = _learner(args)
    resolve_device(getattr(learner, "device", "cpu"))  # unavailable: an error before any work
    if history is not None:
        output_folder(history)
    settings = asdict(learner)
    args.outputs.claim([out, *([history] if history else [])])
    with warnings.catch_warnings(record=True) as caught:  # told after the fit, each once
        warnings.simplefilter("always", IdentifiabilityWarning)
        if in_memory:
            cast("IGLP", learner).fit(cast(InteractionLog, log))  # read in memory above
        elif backend is not None:
            cast("BatchIGL | AIIGL", learner).fit(log, backend=backend)
        else:
            cast("BatchIGL | AIIGL | VIIGL", learner).fit(log)
    for seen in caught:  # on stderr, as one line each unless --verbose; and in the summary
        warnings.showwarning(seen.message, seen.category, seen.filename, seen.lineno)
    head = {"log": str(args.log), "model": str(out), "algorithm": args.algorithm,
            "samples": len(log), "n_actions": log.n_actions, "context_dim": log.context_dim,
            "feedback_dim": log.feedback_dim, "streamed": isinstance(log, LogStream),
            "standardisation": ("off" if learner.standardiser_ is None
                                else learner.standardiser_.rules)}
    outlying = _outlying_columns(learner.standardiser_, learner.schema_)
    if outlying:
        head["outlying_columns"] = outlying
    if isinstance(learner, BatchIGL):
        summary = {**head, **_igl_summary(args, learner, log, settings)}
        extra = {"objective": summary["objective"], "lemma5": summary["lemma5"]}
    else:
        summary = {**head, "settings": settings, **asdict(learner.report_)}
        summary["identifiability_warnings"] = summary.pop("warnings")
        if in_memory:
            summary["definitely_bad_field"] = cast(InteractionLog, log).definitely_bad is not None
        extra = {}
    if backend is not None:
        summary["distributed"] = asdict(learner.distributed_)  # type: ignore[union-attr]
    save_model(learner, out,  # with the log's feature schema, which the learner keeps
               extra={"log": str(args.log), "samples": len(log),
                      "log_fingerprint": fingerprint(args.log), "settings": settings,
                      "rows_fingerprint": (rows_fingerprint(log)
                                           if isinstance(log, InteractionLog) else None),
                      "rows_sketch": (rows_sketch(log)
                                      if isinstance(log, InteractionLog) else None),
                      "contexts_sketch": (rows_sketch(ContextSet(log.context, log.n_actions))
                                          if isinstance(log, InteractionLog) else None),
                      **extra})  # save_model writes it with safejson (non-finite: null)
    if history is not None:
        records = cast(BatchIGL, learner).report_.history
        write_text(history, "".join(safejson.dumps(asdict(record)) + "\n"
                                    for record in records))
        summary["history"] = {"file": str(history), "epochs": len(records)}
    _print_summary(summary)
    return 0


def _backend(args: argparse.Namespace, reading: StreamSettings) -> RayTrain | None:
    """The settings of a data-parallel fit on Ray Train (``--backend ray``), or None for a fit
    in this process; a combination that cannot run is an error naming the option."""
    if args.backend != "ray":
        return None
    if args.algorithm not in ("igl", "ai-igl"):
        raise IGLearnError(f"--backend ray fits --algorithm igl and ai-igl; --algorithm "
                           f"{args.algorithm} fits in one process: drop --backend ray")
    if reading.stream == "off":
        raise IGLearnError("--stream off: --backend ray streams each worker's share of the "
                           "log; use --stream on or auto")
    if reading.reader == "ray":
        raise IGLearnError("--reader ray: with --backend ray each worker reads its own row "
                           "groups; drop --reader ray")
    return replace(build_settings(args, RayTrain(), BACKEND), address=reading.ray_address)


def _check_options(args: argparse.Namespace) -> None:
    """Refuse an option of another algorithm than ``--algorithm``, naming the option and the
    algorithm it belongs to (from the settings classes: no torch is imported)."""
    algorithm = args.algorithm
    defaults = algorithm_defaults()
    given = {dest[len(LEARNER) + 1:].partition(".")[0] for dest in vars(args)
             if dest.startswith(LEARNER + ".")}
    foreign = sorted(given - _setting_names(defaults[algorithm]))
    if algorithm != "igl":
        foreign += [name for name in IGL_ONLY if getattr(args, name) is not None]
    if foreign:
        owners = (["igl"] if foreign[0] in IGL_ONLY else
                  [name for name, settings in defaults.items()
                   if foreign[0] in _setting_names(settings)])
        raise IGLearnError(f"{flag(foreign[0])} is an option of --algorithm "
                           f"{' or '.join(owners)}, which --algorithm {algorithm} does not "
                           f"have; drop it, or choose that algorithm")


def _learner(args: argparse.Namespace) -> BatchIGL | AIIGL | IGLP | VIIGL:
    """The learner ``--algorithm`` names, with the settings given (checked by
    :func:`_check_options` first); without ``--progress`` or ``--no-progress``, its progress
    bars are shown when stderr is a terminal."""
    from iglearn.learners.registry import learner_class

    algorithm = args.algorithm
    start: BatchIGL | AIIGL | IGLP | VIIGL
    if algorithm == "igl":
        start = objectives()[args.objective or "iglearn"](seed=args.seed)
    else:  # only this algorithm's learner module is imported
        start = learner_class(algorithm)(seed=args.seed)
    learner = build_settings(args, start, LEARNER)
    learner.progress = _watched(args)
    return learner


def _watched(args: argparse.Namespace) -> bool:
    """Whether a fit shows its progress (a streamed log's passes, then the fit's stages):
    ``--progress`` or ``--no-progress``, else when stderr is a terminal (a fit watched on
    one)."""
    given = vars(args).get(f"{LEARNER}.progress")
    return sys.stderr.isatty() if given is None else bool(given)


def _igl_summary(args: argparse.Namespace, learner: BatchIGL, log: InteractionLog | LogStream,
                 settings: dict) -> dict:
    """What a BatchIGL fit reports: its FitReport's measures and Lemma 5's bound."""
    from iglearn.learners.stream import min_probability
    from iglearn.theory import ACTION_EXPLAINED, lemma5_summary

    report = learner.report_
    n, k = len(log), log.n_actions
    iota = DEFAULT_IOTA if args.iota is None else args.iota
    v_bad = 1.0 / k if args.v_bad is None else args.v_bad
    max_weight = 1.0 / min_probability(log)
    return {
        "objective": args.objective or "iglearn", "settings": settings,
        "indicator": report.indicator, "indicator_error": report.indicator_error,
        "restart_threshold": report.threshold, "identified": report.identified,
        "corrector_flipped": report.flipped, "corrector_statistic": report.corrector_statistic,
        "restarts": report.restarts, "attempt_indicators": report.attempt_indicators,
        "start_indicators": report.start_indicators,
        "action_explained": report.action_explained,
        "identifiability_warnings": report.warnings, "epochs": len(report.history),
        "lemma5": {
            **lemma5_summary(report.indicator, n, k, iota, v_bad, max_weight,
                             report.action_explained),
            "note": "V(pi) >= indicator - W*eps_D + V(pi_bad), eps_D = sqrt(iota/(2n)), W the "
                    "largest importance weight 1/p of the log (K under uniform logging); "
                    "reported only when the indicator exceeds V(pi_bad) + W*eps_D, which "
                    "certifies the decoder, and clipped to [0, 1]; holds with the probability "
                    "iota encodes for the policy and decoder classes (iota is user-supplied, "
                    "--iota) when the feedback depends on the action only through the "
                    "reward: not reported when the logged action explains most of the "
                    "decoded reward (action_explained above "
                    f"{ACTION_EXPLAINED:g})",
        },
        "seconds": report.seconds,
    }


def _model_and_table(model_dir: str, data: str, contexts_only: bool,
                     args: argparse.Namespace, reading: StreamSettings | None = None
                     ) -> tuple[BatchIGL | AIIGL | IGLP | VIIGL,
                                InteractionLog | LogStream | ContextSet]:
    """The model and the data of ``evaluate`` or ``predict``. A missing data file, and for a
    model folder (not an archive) a damaged ``model.json`` or data that do not match the
    model (its columns, K, the context's dimension), are told before torch is imported."""
    from iglearn.files import input_file

    if not Path(data).is_dir():  # a missing or unreadable file: told before torch is imported
        input_file(data)

    wanted = ("context",) if contexts_only else None  # predict reads no label
    opened = None
    if Path(model_dir).is_dir():  # model.json, then the data against it: no torch yet
        from iglearn.models.io import METADATA, read_metadata, recorded_schema

        meta = read_metadata(model_dir)
        opened = _opened(data, meta, recorded_schema(meta, Path(model_dir) / METADATA), args,
                         wanted)
        _check_reading(opened[1], reading)

    from iglearn.data.stream import log_from
    from iglearn.devices import resolve_device
    from iglearn.learners.base import check_compatible
    from iglearn.models.archive import read_model

    device = build_settings(args, Placement(), PLACEMENT).device
    resolve_device(device)  # an unavailable device is an error before the model is read
    learner = read_model(model_dir)
    learner.device = device  # type: ignore[union-attr]
    meta = learner.metadata_
    if opened is None:  # an archive: its data are checked now
        opened = _opened(data, meta, learner.schema_, args, wanted)
        _check_reading(opened[1], reading)
    reader, info = opened
    table: InteractionLog | LogStream | ContextSet
    if contexts_only and info.is_log:
        arrays = reader.arrays(("context", "label"))
        table = ContextSet(arrays["context"], info.n_actions, arrays.get("label"), info.source)
    elif info.is_log:
        table = log_from(reader, reading)
    else:
        table = reader.checked(reader.arrays())
    check_compatible(table, meta["n_actions"], meta["context_dim"], meta["feedback_dim"])
    return learner, table


def _check_reading(info: TableInfo, reading: StreamSettings | None) -> None:
    """Refuse a way of reading (``--stream on``, ``--reader ray``) that data of contexts only
    would not use: they are read into memory in one piece."""
    if reading is None or info.is_log:
        return
    asked = ("--reader ray" if reading.reader == "ray"
             else "--stream on" if reading.stream == "on" else None)
    if asked is not None:
        raise IGLearnError(f"{asked}: {info.source} holds contexts only, which are read into "
                           f"memory, never streamed; drop {asked}")


def _opened(data: str, meta: dict, schema: FeatureSchema | None, args: argparse.Namespace,
            wanted: tuple[str, ...] | None = None) -> tuple[TableReader, TableInfo]:
    """The data file opened with the model's feature schema and column mapping (``meta``:
    its checked ``model.json``), its K and context dimension checked against the model's;
    ``wanted``: the fields to read of a table read through a mapping."""
    from iglearn.data.formats import model_mapping, open_table

    reader = open_table(data, schema, _columns(args, model_mapping(schema, wanted)),
                        n_actions=meta["n_actions"], wanted=wanted)
    info = reader.info
    if info.n_actions != meta["n_actions"]:
        raise IGLearnError(f"{info.source}: n_actions is {info.n_actions} but the model was fit "
                           f"with K = {meta['n_actions']}; use data with the model's actions "
                           f"or refit")
    if info.dims["context"] != meta["context_dim"]:
        raise IGLearnError(f"{info.source}: field 'context' has dimension "
                           f"{info.dims['context']} but the model expects "
                           f"{meta['context_dim']}; use contexts with the model's features")
    return reader, info


IN_SAMPLE_NOTE = ("the data are rows of the log the model was fitted on (all of it or a "
                  "part): these measures are "
                  "in-sample and overestimate how the model does on new data; evaluate on "
                  "held-out data for that")
"""What ``evaluate`` adds when the data are the model's training log."""
IN_SAMPLE_CONTEXTS_NOTE = IN_SAMPLE_NOTE.replace("are rows of the log",
                                                 "are contexts of the log")
"""What ``evaluate`` adds when the data are the training log's contexts (with labels)."""

IN_SAMPLE_SHARE = 0.99
"""Data whose rows are at least this share training rows (by the fit's row sketch,
:func:`~iglearn.data.logs.training_share`: exact for a training log of fewer than 1,024
rows, estimated for a larger one) are in sample: a part of the training log."""
OVERLAP_SHARE = 0.05
"""Data whose rows are at least this share training rows get :data:`OVERLAP_NOTE`."""
OVERLAP_NOTE = ("about {share:.0%} of these {rows} are {rows} of the log the model was fitted "
                "on: the measures mix in-sample and held-out data and overestimate how the "
                "model does on new data; evaluate on rows the fit did not see for that")
"""What ``evaluate`` adds when the data overlap the training log in part."""


def _evaluate(args: argparse.Namespace) -> int:
    learner, table = _model_and_table(args.model, args.data, contexts_only=False, args=args,
                                      reading=build_settings(args, StreamSettings(), STREAM))
    from iglearn.files import same_content
    from iglearn.learners.evaluation import evaluate
    from iglearn.learners.registry import algorithm_of
    from iglearn.threads import torch_threads

    with torch_threads(build_settings(args, Placement(), PLACEMENT).threads):
        measures = evaluate(learner, table, by_position=True)  # mapped by _model_and_table
    if set(measures) == {"samples"}:
        raise IGLearnError(f"{args.data}: nothing to evaluate; the data need labels, a reward "
                           f"or feedback")
    training = learner.metadata_.get("training") or {}
    in_sample = same_content(args.data, training.get("log_fingerprint"))
    if not in_sample and isinstance(table, InteractionLog) and training.get("rows_fingerprint"):
        # the same interactions saved again (another format, another order) are no new data
        in_sample = rows_fingerprint(table) == training["rows_fingerprint"] or in_sample
    contexts = isinstance(table, ContextSet)  # labelled contexts: by the contexts' sketch
    share = None if in_sample or isinstance(table, LogStream) else training_share(
        training.get("contexts_sketch" if contexts else "rows_sketch"), table)
    if share is not None and share >= IN_SAMPLE_SHARE:  # rows of the training log only
        in_sample = True
    judged: bool | None = in_sample or (None if share is None else False)  # None: untold
    record = {"model": str(args.model), "data": str(args.data),
              "algorithm": algorithm_of(learner), "in_sample": judged, **measures}
    if share is not None:
        record["training_rows_share"] = share
    if in_sample:
        record["note"] = IN_SAMPLE_CONTEXTS_NOTE if contexts else IN_SAMPLE_NOTE
    elif share is not None and share >= OVERLAP_SHARE:
        record["note"] = OVERLAP_NOTE.format(share=share, rows="contexts" if contexts
                                             else "rows")
    told = [str(note) for note in training.get("warnings") or []]
    if "oriented" in training:  # known rewards chose its direction: no doubt about it left
        from iglearn.learners.batch_igl import settled_by_orienting
        told = [note for note in told if not settled_by_orienting(note)]
    if told:  # what the fit warned of still holds of the model: said again where it is judged
        record["fit_warnings"] = told
        for note in told:
            warnings.warn(f"the model's fit warned: {note}", UserWarning, stacklevel=1)
    _print(record)
    return 0


def _orient(args: argparse.Namespace) -> int:
    """``iglearn orient``: a two-action igl or vi-igl model's direction chosen from DATA's
    interactions whose reward or label is known (``BatchIGL.orient``), written to --out with
    the model's training record."""
    from iglearn.data.stream import log_from
    from iglearn.learners.registry import algorithm_of, save_model

    out = Path(args.out)
    log_path = None if args.log is None else Path(args.log)
    check_paths([("MODEL", Path(args.model)), ("DATA", Path(args.data)),
                 *([("--log", log_path)] if log_path else [])], [("--out", out)])
    check_model_output(out)
    in_memory = StreamSettings(stream="off")
    learner, table = _model_and_table(args.model, args.data, contexts_only=False, args=args,
                                      reading=in_memory)
    algorithm = algorithm_of(learner)
    if algorithm not in ("igl", "vi-igl", "ai-igl"):
        raise IGLearnError(f"{args.model}: an {algorithm} model; orient chooses the direction "
                           f"of a two-action igl, vi-igl or ai-igl model's decoded reward")
    if not isinstance(table, InteractionLog):
        raise IGLearnError(f"{args.data}: holds contexts only; orient reads a log with the "
                           f"actions, the feedback and a reward or label column")
    if log_path is not None and algorithm != "ai-igl":
        raise IGLearnError(f"--log: an {algorithm} model is oriented by DATA alone (its one "
                           f"decoder flips with its policy); drop --log")
    args.outputs.claim([out])
    if algorithm == "ai-igl":
        log = None if log_path is None else log_from(
            _opened(str(log_path), learner.metadata_, learner.schema_, args)[0], in_memory)
        oriented = cast("AIIGL", learner).orient(table, log)
    else:
        oriented = cast("BatchIGL | VIIGL", learner).orient(table)
    record = {"data": str(args.data), **oriented._asdict()}
    if log_path is not None:
        record["log"] = str(log_path)
    # the recorded fit, as it was written, and now its orientation
    training = learner.metadata_.get("training") or {}
    save_model(learner, out, extra={**training, "oriented": record})
    _print({"model": str(args.model), "out": str(out), "algorithm": algorithm, **record})
    return 0


PREDICTION_SUFFIXES = (".npz", ".parquet", ".csv")


def _predict(args: argparse.Namespace) -> int:
    from iglearn.files import output_folder, write_files_atomic
    from iglearn.sampling import sample_actions
    from iglearn.seeding import as_generator
    from iglearn.threads import torch_threads

    out = Path(args.out)
    if out.suffix.lower() not in PREDICTION_SUFFIXES:
        raise IGLearnError(f"--out {out}: unknown file extension {out.suffix or '(none)'!r}; "
                           f"use one of {', '.join(PREDICTION_SUFFIXES)}")
    check_paths([("MODEL_DIR", args.model), *with_sidecar("CONTEXTS", args.contexts)],
                [("--out", out)])
    output_folder(out)
    learner, table = _model_and_table(args.model, args.contexts, contexts_only=True, args=args)
    table = cast("ContextSet | InteractionLog", table)  # contexts only: never streamed
    args.outputs.claim([out])
    from iglearn.learners.base import DriftCount  # torch: once the inputs are checked

    rng = as_generator(args.seed)
    actions, probabilities, every = [], [], []
    drift = DriftCount(learner)  # told once, for the whole file, not per slice
    with (torch_threads(build_settings(args, Placement(), PLACEMENT).threads),
          warnings.catch_warnings()):
        warnings.simplefilter("ignore", DriftWarning)
        for start in range(0, len(table), 65536):
            rows = ContextSet(table.context[start:start + 65536], table.n_actions,
                              source=table.source)  # a warning names the file
            pi = learner.predict_proba(rows).astype(np.float64)
            drift.add(rows.context, "context")
            if args.sample:
                pi /= pi.sum(1, keepdims=True)
                action = sample_actions(pi, rng)
            else:
                action = pi.argmax(1)
            actions.append(action)
            probabilities.append(pi[np.arange(len(pi)), action])
            if args.all_probabilities:
                every.append(pi)
    drift.warn(table.source)
    action, probability = np.concatenate(actions), np.concatenate(probabilities)
    schema = learner.schema_
    names = None if schema is None else schema.action_names
    written = action if names is None else np.array(names)[action]  # as the log named them
    columns = None
    if args.all_probabilities:
        labels = names if names is not None else [str(a) for a in range(table.n_actions)]
        columns = ([f"probability_{label}" for label in labels],
                   np.concatenate(every) if every else np.zeros((0, table.n_actions)))
    write_files_atomic([(out, lambda tmp: _write_predictions(out.suffix.lower(), tmp, written,
                                                             probability, columns))])
    record = {"model": str(args.model), "contexts": str(args.contexts), "out": str(out),
              "rows": len(action), "sampled": args.sample,
              "action_counts": np.bincount(action, minlength=table.n_actions).tolist()}
    _print(record if names is None else {**record, "actions": list(names)})
    return 0


def _write_predictions(suffix: str, tmp: Path, action: np.ndarray, probability: np.ndarray,
                       every: tuple[list[str], np.ndarray] | None = None) -> None:
    """The predictions file: ``action`` (indices, or the names a model's column mapping
    gives the actions) and ``probability`` per row; with ``every``, the column names and
    values (n, K) of every action's probability too."""
    if suffix == ".npz":
        arrays = {"action": action, "probability": probability}
        if every is not None:
            arrays["probabilities"] = every[1]
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)  # type: ignore[arg-type]
    elif suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        from iglearn.data.formats.arrow import arrow_array

        actions = pa.array(action.tolist()) if action.dtype.kind == "U" else arrow_array(action)
        columns = {"action": actions, "probability": arrow_array(probability)}
        if every is not None:
            columns |= {name: arrow_array(np.ascontiguousarray(every[1][:, k]))
                        for k, name in enumerate(every[0])}
        pq.write_table(pa.table(columns), tmp)
    else:
        import csv

        with open(tmp, "w", newline="") as f:
            rows = csv.writer(f, lineterminator="\n")
            rows.writerow(("action", "probability", *(every[0] if every else ())))
            values = probability[:, None] if every is None else np.column_stack(
                [probability, every[1]])
            rows.writerows((a, *(f"{p:.9g}" for p in row))
                           for a, row in zip(action.tolist(), values, strict=True))


def skewed_policy(context_dim: int, n_actions: int, seed: int
                  ) -> Callable[[np.ndarray], np.ndarray]:
    """A fixed non-uniform logging policy: half uniform, half a softmax of random linear scores
    (every action keeps probability >= 1/(2K), so importance weights stay bounded)."""
    weights = np.random.default_rng(seed).normal(size=(context_dim, n_actions)) * 3.0

    def policy(context: np.ndarray) -> np.ndarray:
        scores = context @ weights / max(1.0, math.sqrt(context_dim))
        scores -= scores.max(1, keepdims=True)
        soft = np.exp(scores)
        soft /= soft.sum(1, keepdims=True)
        return 0.5 * soft + 0.5 / n_actions
    return policy


def _simulate(args: argparse.Namespace) -> int:
    from iglearn.data.contexts import ContextSet
    from iglearn.data.formats import SUFFIXES, write_table
    from iglearn.envs.named import default_noise, named_environment
    from iglearn.files import output_folder

    noisy = args.env == "bci" or args.env.startswith("noisy-")
    if args.noise is not None and not noisy:
        raise IGLearnError(f"--noise is the noise level of the bci environment or the "
                           f"replacement probability of a noisy-* one; {args.env} has none: "
                           f"drop --noise")
    if args.noise is not None and args.env.startswith("noisy-") and not 0 <= args.noise <= 1:
        raise IGLearnError(f"--noise {args.noise}: the replacement probability of {args.env} "
                           f"must be in [0, 1]")
    targets = [Path(args.out)] + ([Path(args.test_out)] if args.test_out else [])
    for target in targets:
        if target.suffix.lower() not in SUFFIXES:
            raise IGLearnError(f"{target}: unknown file extension {target.suffix or '(none)'!r}; "
                               f"use one of {', '.join(SUFFIXES)}")
        output_folder(target)
    outputs = [*with_sidecar("--out", args.out)]
    if args.test_out:
        outputs += with_sidecar("--test-out", args.test_out)
    check_paths([("--data-dir", args.data_dir)] if args.data_dir else [], outputs)
    args.outputs.claim([path for _, path in outputs])
    noise = default_noise(args.env) if args.noise is None else args.noise
    env = named_environment(args.env, args.data_dir, noise)
    policy = None
    if args.policy == "skewed":
        policy = skewed_policy(env.context_dim, env.n_actions, args.seed + 1)
    log = env.log(args.samples, seed=args.seed, policy=policy)
    log = type(log)(**{**log.__dict__, "source": str(args.out)})
    write_table(log, args.out)
    record = {"env": args.env, "out": str(args.out), "samples": len(log),
              "n_actions": log.n_actions, "context_dim": log.context_dim,
              "feedback_dim": log.feedback_dim, "independence": env.independence.value,
              "policy": args.policy, "seed": args.seed}
    if noisy:
        record["noise"] = noise
    if args.test_out:
        features, labels = env.test_set()
        write_table(ContextSet(features, env.n_actions, labels, str(args.test_out)),
                    args.test_out)
        record["test_out"] = str(args.test_out)
        record["test_contexts"] = len(labels)
    _print(record)
    return 0


def _convert(args: argparse.Namespace) -> int:
    from iglearn.data.formats import convert

    outputs = with_sidecar("OUT", args.output)
    check_paths(with_sidecar("IN", args.input), outputs)
    args.outputs.claim([path for _, path in outputs])
    info = convert(args.input, args.output, args.shard_rows, _columns(args))
    record = {"in": str(args.input), "out": str(args.output), "rows": info.n_rows,
              "n_actions": info.n_actions, "fields": list(info.fields), "dims": info.dims}
    if args.shard_rows is not None:
        from iglearn.data.formats.shards import shard_files
        record["shards"] = len(shard_files(Path(args.output)))
    _print(record)
    return 0


def _load(args: argparse.Namespace) -> int:
    from iglearn.models.archive import extract_archive

    out = Path(args.out)
    check_paths([("ARCHIVE", args.archive)], [("--out", out)])
    check_model_output(out)
    args.outputs.claim([out])
    learner = extract_archive(args.archive, out)
    meta = learner.metadata_
    _print({"archive": str(args.archive), "model": str(out), "algorithm": meta["algorithm"],
            "n_actions": meta["n_actions"], "context_dim": meta["context_dim"],
            "feedback_dim": meta["feedback_dim"],
            "version": meta.get("training", {}).get("version")})
    return 0


def _pack(args: argparse.Namespace) -> int:
    """``iglearn pack``: the model folder MODEL as the archive the decision service imports
    (``PUT /v1/model``), checked first as any model folder is; the reverse of ``load``."""
    from iglearn.files import write_atomic
    from iglearn.models.archive import ARCHIVE_SUFFIXES, is_archive, pack_model, read_model

    model, out = Path(args.model), Path(args.out)
    if not out.name.lower().endswith(ARCHIVE_SUFFIXES):
        raise IGLearnError(f"--out {out}: a model archive's name ends with "
                           f"{' or '.join(ARCHIVE_SUFFIXES)} (model.tar.gz, say)")
    if is_archive(model):
        raise IGLearnError(f"{model}: is a model archive already; give the model folder "
                           f"(iglearn fit's --out) to pack")
    check_paths([("MODEL", model)], [("--out", out)])
    meta = read_model(model).metadata_  # checked as evaluate and the service check it
    archive = pack_model(model)
    write_atomic(out, lambda tmp: tmp.write_bytes(archive))
    _print({"model": str(model), "archive": str(out), "bytes": len(archive),
            "algorithm": meta["algorithm"], "n_actions": meta["n_actions"],
            "context_dim": meta["context_dim"], "feedback_dim": meta["feedback_dim"]})
    return 0


FORMATS = "format from the extension: .npz, .parquet, .csv or .dsjson"


def add_commands(commands: argparse._SubParsersAction) -> None:
    """Register fit, evaluate, orient, predict, load, pack, simulate and convert on the ``iglearn``
    parser; each command's options are added when that command is parsed
    (:class:`iglearn.cli.LazySubParsers`)."""
    formats = FORMATS
    commands.add_parser(
        "fit", help="fit a policy and a reward decoder on a log", build=_fit_options,
        description=f"Fit a policy and reward decoders on LOG ({formats}) with --algorithm: "
                    f"igl (BatchIGL, the 2021 paper: feedback independent of the context and "
                    f"the action given the reward), ai-igl (AIIGL: feedback that may depend "
                    f"on the action too), igl-p (IGLP: personalised feedback with three "
                    f"latent states, reading the log's definitely_bad flags) or vi-igl "
                    f"(VIIGL: conditional mutual information, for feedback that is sometimes "
                    f"noise). Logged probabilities are used as importance weights, so logs "
                    f"from any policy work. Every setting of the four learners and of their "
                    f"optimisation is an option below: the shared ones set any of them, "
                    f"those of one algorithm only are refused with another.")
    commands.add_parser(
        "evaluate", help="measure a fitted model on a log or a labelled context set",
        build=_evaluate_options,
        description="JSON with accuracy (labels), the importance-weighted true value "
                    "(reward; evaluation only), and the decoded-reward value and the "
                    "indicator of the model's algorithm (feedback): Eq. 9 for igl, the sum "
                    "over actions of Cov_a(pi(a|x), psi_a(y)) for ai-igl; 'in_sample' is "
                    "true (with a note) when DATA is the log the model was fitted on, in any "
                    "format or order, a part of it, or its contexts with labels; false when "
                    "not, with 'training_rows_share', the share of its rows that are the "
                    "log's (and a note when some are); null when it cannot be told (a model "
                    "fitted on a stream, data read as a stream, a model that does not say).")
    commands.add_parser(
        "orient", help="choose a two-action model's direction from labelled interactions",
        build=_orient_options,
        description="With two actions the direction of the decoded reward is not identified "
                    "(the fit warns): read DATA's interactions whose reward (or label, the "
                    "right action) is known, a calibration session's, and where the model's "
                    "decoded reward matches it on fewer than half of them flip the decoder "
                    "and negate the policy's scores (ai-igl: each action's decoder and score, "
                    "and with --log the policy fitted again); write the model to --out. For "
                    "igl, vi-igl and ai-igl models; DATA is not fitted on. Prints the rows "
                    "read, the agreement after the choice and whether it flipped.")
    commands.add_parser(
        "predict", help="actions and their probabilities for contexts", build=_predict_options,
        description="Greedy (or, with --sample, sampled) actions of the fitted policy and "
                    "their probabilities pi(a|x), written to --out (.npz, .parquet or .csv).")
    commands.add_parser(
        "load", help="write a model archive from the service as a model folder",
        build=_load_options,
        description="Check the model archive ARCHIVE (a .tar.gz from the decision service's "
                    "GET /v1/model/export) as any model folder is checked, and write it as "
                    "the model folder --out, which fit, evaluate and predict read; prints "
                    "what the model is as JSON.")
    commands.add_parser(
        "pack", help="write a model folder as an archive for the decision service",
        build=_pack_options,
        description="Check the model folder MODEL (the --out folder of fit or load) as any "
                    "model folder is checked, and write it as the model archive --out "
                    "(.tar.gz), which the decision service imports (PUT /v1/model) and "
                    "evaluate and predict read; the reverse of load. Prints what the model "
                    "is as JSON.")
    commands.add_parser(
        "simulate", help="write a log from a built-in environment", build=_simulate_options,
        description=f"Log interactions in a built-in environment ({formats}).")
    commands.add_parser(
        "convert", help="convert a log or context set between formats", build=_convert_options,
        description=f"Convert IN to OUT ({formats}, or a folder of Parquet shards), batch by "
                    f"batch; with --shard-rows, OUT is a new or empty folder that receives "
                    f"Parquet shards of that many rows, all at once when every one is written.")


def _fit_options(fit: argparse.ArgumentParser) -> None:
    """The arguments of ``fit`` (from the learners' settings classes, which import no
    torch)."""
    from iglearn.learners.settings import (
        AIIGLSettings,
        BatchIGLSettings,
        IGLPSettings,
        VIIGLSettings,
    )

    defaults = algorithm_defaults()
    shared, decoding_names = shared_settings()
    fit.add_argument("log", metavar="LOG",
                     help="the interaction log to fit: a file, or a folder of Parquet shards")
    fit.add_argument("--out", required=True, metavar="MODEL_DIR",
                     help="model folder to write: a new or empty folder, or one that holds "
                          "exactly a model iglearn wrote, which is replaced")
    fit.add_argument("--seed", type=number(int), default=0,
                     help="seed of the initialisations and the shuffles")
    fit.add_argument("--history", default=None, metavar="FILE",
                     help="also write every epoch's record (attempt, stage, epoch, loss, "
                          "indicator, corrector statistic, flip) to FILE, one JSON object "
                          "per line; --algorithm igl only (model.json keeps them too) "
                          "(default: not written)")
    fit.add_argument("--algorithm", choices=tuple(defaults), default="igl",
                     help="igl: BatchIGL, the 2021 paper's objective (Eq. 2), for feedback "
                          "that depends on the reward alone; ai-igl: AIIGL, per-action "
                          "covariance (Xie et al. 2022), for feedback that may also depend on "
                          "the action; igl-p: IGLP, inverse kinematics and three latent states "
                          "(Maghakian et al. 2023), for feedback that depends on the user "
                          "(the context); vi-igl: VIIGL, conditional mutual information "
                          "(Hu et al. 2024), for feedback that is sometimes noise")
    igl = fit.add_argument_group("options of --algorithm igl only")
    igl.add_argument("--objective", choices=OBJECTIVES, default=None,
                     help="iglearn: the defaults below; paper: Eq. 2 as written, with the "
                          "corrector and the adaptive restart and none of iglearn's additions "
                          "(BatchIGL.paper(): no grounding or policy stage, no scaled weight "
                          "decay, no control variate, no policy negation); options given "
                          "below override either (default: iglearn)")
    igl.add_argument("--iota", type=number(float, positive=True), default=None,
                     help="complexity term of Lemma 5's bound (default: log(2/0.05))")
    igl.add_argument("--v-bad", type=unit_value, default=None,
                     help="V(pi_bad) in [0, 1], the value of the sufficiently bad policy in "
                          "Lemma 5's bound (default: 1/K, uniform play)")
    only = {name: _setting_names(settings) - shared for name, settings in defaults.items()}
    add_settings(fit, BatchIGLSettings(), LEARNER, "settings of every algorithm",
                 "Where the algorithms' defaults differ, the help gives each; with igl they "
                 "are those of --objective iglearn.", skip=("seed", *only["igl"]),
                 shared=defaults, stated={"progress": "shown when stderr is a terminal"})
    decoding = {name: defaults[name] for name in ("igl", "ai-igl")}
    also = sorted(_setting_names(VIIGLSettings()) & decoding_names)
    add_settings(fit, BatchIGLSettings(), LEARNER, "settings of --algorithm igl and ai-igl",
                 "Where their defaults differ, the help gives each. --algorithm vi-igl reads "
                 "those it has too: " + ", ".join("--" + n.replace("_", "-") for n in also)
                 + ".",
                 skip=("seed", *(_setting_names(BatchIGLSettings()) - decoding_names)),
                 shared={**decoding, "vi-igl": defaults["vi-igl"]})
    add_settings(fit, BatchIGLSettings(), LEARNER, "settings of --algorithm igl only (BatchIGL)",
                 skip=("seed", *shared, *decoding_names))
    add_settings(fit, AIIGLSettings(), LEARNER, "settings of --algorithm ai-igl only (AIIGL)",
                 skip=("seed", *shared, *decoding_names))
    add_settings(fit, IGLPSettings(), LEARNER, "settings of --algorithm igl-p only (IGLP)",
                 skip=("seed", *shared))
    add_settings(fit, VIIGLSettings(), LEARNER, "settings of --algorithm vi-igl only (VIIGL)",
                 skip=("seed", *shared, *decoding_names))
    fit.add_argument("--backend", choices=("local", "ray"), default="local",
                     help="local: fit in this process; ray: a data-parallel fit on Ray Train "
                          "(--algorithm igl and ai-igl, a Parquet LOG streamed: each worker "
                          "reads its share of the row groups; needs the ray extra) "
                          "(default: local)")
    add_settings(fit, RayTrain(), BACKEND, "--backend ray (RayTrain)",
                 "A fit on --workers Ray Train workers, on the cluster at --ray-address.",
                 skip=("address",))
    add_settings(fit, StreamSettings(), STREAM, "reading the log",
                 "A log larger than memory is streamed from disk: shuffled mini-batches "
                 "through a bounded buffer, full passes as sums over row groups.")
    _add_columns(fit, "Which columns of a .csv or .parquet LOG hold which field, when they are "
                      "not named as iglearn writes them (context_0, ..., action, probability, "
                      "feedback_0, ..., n_actions). A mapping that renames a field is kept in the "
                      "model, so that evaluate and predict read tables with the same column names "
                      "without these options.")
    fit.set_defaults(run=_fit, reads=("log",))


def _evaluate_options(evaluate: argparse.ArgumentParser) -> None:
    """The arguments of ``evaluate``."""
    formats = FORMATS
    evaluate.add_argument("model", metavar="MODEL",
                          help="a model folder from iglearn fit, or a model archive "
                               "(.tar.gz) from the service's GET /v1/model/export")
    evaluate.add_argument("data", metavar="DATA",
                          help=f"a log or a labelled context set ({formats})")
    add_settings(evaluate, Placement(), PLACEMENT, "where the model computes")
    add_settings(evaluate, StreamSettings(), STREAM, "reading a log",
                 "A log larger than memory is evaluated in one streamed pass.",
                 skip=("shuffle_rows",))
    _add_columns(evaluate, "Which columns of a .csv or .parquet DATA hold which field (default: "
                           "the column mapping the model was fitted with, else iglearn's layout); "
                           "the options given replace the model's entries. K defaults to the "
                           "model's.")
    evaluate.set_defaults(run=_evaluate, reads=("model", "data"))


def _predict_options(predict: argparse.ArgumentParser) -> None:
    """The arguments of ``predict``."""
    formats = FORMATS
    predict.add_argument("model", metavar="MODEL",
                          help="a model folder from iglearn fit, or a model archive "
                               "(.tar.gz) from the service's GET /v1/model/export")
    predict.add_argument("contexts", metavar="CONTEXTS",
                         help=f"a context set or a log whose contexts to act on ({formats})")
    predict.add_argument("--out", required=True, metavar="FILE",
                         help=f"predictions to write: action and probability per row "
                              f"({', '.join(PREDICTION_SUFFIXES)})")
    predict.add_argument("--sample", action="store_true",
                         help="draw actions from pi instead of taking the most likely one")
    predict.add_argument("--seed", type=number(int), default=0, help="seed of --sample")
    predict.add_argument("--all-probabilities", action="store_true",
                         help="also write every action's probability: columns "
                              "probability_<action> (the action's name, else its index); "
                              "in .npz an array probabilities of one row per context")
    add_settings(predict, Placement(), PLACEMENT, "where the model computes")
    _add_columns(predict, "Which columns of a .csv or .parquet CONTEXTS hold which field "
                          "(default: the column mapping the model was fitted with, else iglearn's "
                          "layout); the options given replace the model's entries. K defaults to "
                          "the model's. A row with a missing value is refused: predict answers "
                          "every row.", skip=("missing",))
    predict.set_defaults(run=_predict, reads=("model", "contexts"))


def _orient_options(orient: argparse.ArgumentParser) -> None:
    """The arguments of ``orient``."""
    orient.add_argument("model", metavar="MODEL",
                        help="a two-action model folder from iglearn fit (--algorithm igl, "
                             "vi-igl or ai-igl), or a model archive (.tar.gz)")
    orient.add_argument("data", metavar="DATA",
                        help=f"a log whose interactions have a reward or a label column "
                             f"({FORMATS})")
    orient.add_argument("--log", default=None, metavar="LOG",
                        help="ai-igl: the log the model was fitted on; where the decoder of "
                             "one action flips and not the other's, the policy is fitted "
                             "again on it (default: none; orient then warns)")
    orient.add_argument("--out", required=True, metavar="MODEL_DIR",
                        help="the model folder to write: a new or empty folder, or one that "
                             "holds exactly a model iglearn wrote, which is replaced (not "
                             "MODEL itself)")
    add_settings(orient, Placement(), PLACEMENT, "where the model computes")
    _add_columns(orient, "Which columns of a .csv or .parquet DATA hold which field (default: "
                         "the column mapping the model was fitted with, else iglearn's "
                         "layout).")
    orient.set_defaults(run=_orient, reads=("model", "data"))


def _load_options(load: argparse.ArgumentParser) -> None:
    """The arguments of ``load``."""
    load.add_argument("archive", metavar="ARCHIVE", help="a model archive (.tar.gz)")
    load.add_argument("--out", required=True, metavar="FOLDER",
                      help="the model folder to write (missing, empty or a model folder)")
    load.set_defaults(run=_load, reads=("archive",))


def _pack_options(pack: argparse.ArgumentParser) -> None:
    """The arguments of ``pack``."""
    pack.add_argument("model", metavar="MODEL", help="a model folder")
    pack.add_argument("--out", required=True, metavar="ARCHIVE",
                      help="the model archive to write (.tar.gz or .tgz)")
    pack.set_defaults(run=_pack, reads=("model",))


def _simulate_options(simulate: argparse.ArgumentParser) -> None:
    """The arguments of ``simulate``."""
    from iglearn.envs.named import BCI_NOISE, ENVIRONMENTS, NOISY_P

    formats = FORMATS
    simulate.add_argument("env", choices=ENVIRONMENTS, metavar="ENV",
                          help="mnist (infinite MNIST) or digits (scikit-learn's, offline): the "
                               "2021 task, feedback an image of 1 if rewarded and 0 if not; "
                               "action-inclusive-mnist or action-inclusive-digits: feedback an "
                               "image of the digit (a + 6r - 3) mod 10; bci: the simulated "
                               "brain-computer interface (K = 3, 64-dim patterns, --noise); "
                               "personalised: VW's IGL simulator (tokens, definitely_bad, "
                               "reward +1/0/-1), personalised-continuous (token embeddings "
                               "plus noise), personalised-many (8 users, two vocabularies), "
                               "grounded-digits or grounded-mnist (users who swap good and "
                               "bad words); noisy-<kind>-mnist or noisy-<kind>-digits: the "
                               "2021 task with a share --noise of the feedback images "
                               "replaced by a noise digit (2-9), for kind independent (of "
                               "x, a and r), action, context or both (tied to them)")
    simulate.add_argument("--samples", type=number(int, positive=True), required=True,
                          help="interactions to log")
    simulate.add_argument("--out", required=True, metavar="LOG", help=f"the log ({formats})")
    simulate.add_argument("--policy", choices=("uniform", "skewed"), default="uniform",
                          help="logging policy: uniform, or skewed (half uniform, half a "
                               "fixed random softmax)")
    simulate.add_argument("--seed", type=number(int), default=0,
                          help="seed of the contexts, actions and feedback")
    simulate.add_argument("--test-out", default=None, metavar="FILE",
                          help="also write the held-out test contexts with labels "
                               "(default: not written)")
    simulate.add_argument("--data-dir", default=None, metavar="DIR",
                          help="folder with the four MNIST .gz files, for the MNIST "
                               "environments (default: $IGLEARN_DATA, the user cache, or a "
                               "verified download)")
    simulate.add_argument("--noise", type=number(float), default=None,
                          help=f"noise level of the bci environment, the standard deviation "
                               f"added to every entry of the contexts and feedback (default: "
                               f"{BCI_NOISE}); of a noisy-* environment, the probability that a "
                               f"feedback image is replaced by a noise digit (default: "
                               f"{NOISY_P})")
    simulate.set_defaults(run=_simulate, reads=("data_dir",))


def _convert_options(convert: argparse.ArgumentParser) -> None:
    """The arguments of ``convert``."""
    convert.add_argument("input", metavar="IN",
                         help="the log or context set to read (a file or a folder of Parquet "
                              "shards)")
    convert.add_argument("output", metavar="OUT", help="the file (or shard folder) to write")
    convert.add_argument("--shard-rows", type=number(int, positive=True), default=None,
                         metavar="N", help="write OUT as a folder of Parquet shards of N rows "
                                           "each (default: one file)")
    _add_columns(convert, "Which columns of a .csv or .parquet IN hold which field; OUT is "
                          "written in iglearn's layout, and a mapping that renames a field goes "
                          "into OUT's feature schema (not a .csv's).")
    convert.set_defaults(run=_convert, reads=("input",))
