"""What every policy learner offers once fitted: probabilities, greedy actions, accuracy;
and what the learners trained by gradient share: fitting many trials as one computation."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Self, cast

import numpy as np
import torch

from iglearn.data.contexts import ContextSet
from iglearn.data.limits import check_log_types
from iglearn.data.logs import (
    InteractionLog,
    as_array,
    label_accuracy,
    model_rows,
    probability_warning,
)
from iglearn.data.scaling import (
    DEFAULT_ORIGINS,
    ROW_SPREAD,
    Origins,
    Standardiser,
    beyond_limits,
    check_mode,
    drift_message,
    drift_warning,
    standardised_feedback,
    standardiser_of,
)
from iglearn.data.stream import LogStream
from iglearn.devices import resolve_device
from iglearn.errors import DriftWarning, IGLearnError, shown, warn_caller
from iglearn.learners.settings import UnknownSettingError
from iglearn.learners.stream import action_counts, min_probability, weight_sums
from iglearn.learners.trials import as_tensor
from iglearn.models import Policy
from iglearn.seeding import SeedLike
from iglearn.threads import torch_threads

if TYPE_CHECKING:
    import pandas as pd

    from iglearn.data.formats.base import FeatureSchema
    from iglearn.learners.corrector import Oriented

_CHUNK = 65536


def check_compatible(table: InteractionLog | LogStream | ContextSet, n_actions: int,
                     context_dim: int, feedback_dim: int | None = None) -> None:
    """Errors naming the file and the field when ``table`` does not fit the model: another K,
    another context width, or (a log, when ``feedback_dim`` is given) another feedback
    width."""
    src = table.source
    if table.n_actions != n_actions:
        raise IGLearnError(f"{src}: n_actions is {table.n_actions} but the model was fit with "
                           f"K = {n_actions}; use data with the model's actions or refit")
    if table.context_dim != context_dim:
        raise IGLearnError(f"{src}: field 'context' has dimension {table.context_dim} but the "
                           f"model expects {context_dim}; use contexts with the model's "
                           f"features (and the same feature schema)")
    if (isinstance(table, InteractionLog | LogStream) and feedback_dim is not None
            and table.feedback_dim != feedback_dim):
        raise IGLearnError(f"{src}: field 'feedback' has dimension {table.feedback_dim} but "
                           f"the model's decoder expects {feedback_dim}")


def check_feature_names(table: InteractionLog | ContextSet | LogStream,
                        schema: FeatureSchema | None,
                        blocks: tuple[str, ...] = ("context",)) -> None:
    """Refuse a log's or context set's contexts (or another of its ``blocks``: a log's
    ``feedback``) whose feature names (its ``schema``: a DSJSON file read without the model's
    schema names them in its own order of first appearance, a frame read with a column
    mapping by its columns) are not the model's ``schema``'s, in its order: their columns
    would be read as other features. Either without names passes (nothing to compare)."""
    theirs = getattr(table, "schema", None)
    if schema is None or theirs is None:
        return
    for block in blocks:
        mine, ours = tuple(getattr(theirs, block)), tuple(getattr(schema, block))
        if not mine or not ours or mine == ours:
            continue
        known = set(ours)
        extra = [name for name in mine if name not in known]
        if extra:
            what = f"feature {shown(extra[0])} is not among the model's"
        else:
            n = min(len(mine), len(ours))
            i = next((i for i in range(n) if mine[i] != ours[i]), n)
            what = (f"feature {i} is {shown(mine[i])}, the model's {shown(ours[i])}"
                    if i < n else f"it has {len(mine)} {block} features, the model "
                                  f"{len(ours)}")
        if theirs.columns is not None:  # a table read with a column mapping
            fix = ("read the frame by the model's column mapping, InteractionLog.from_frame("
                   "frame, schema=model.schema_) or ContextSet.from_frame(frame, "
                   "schema=model.schema_)")
        else:
            fix = ("read it with the model's feature schema, read_log(path, "
                   "schema=model.schema_) or read_contexts(path, schema=model.schema_)")
        raise IGLearnError(f"{table.source}: its {block} features are not the model's "
                           f"({what}); {fix}")


def _source_of(value: object, default: str) -> str:
    """What a warning about ``value``'s rows calls them: a log's or a context set's source
    (its file), else ``default`` (an array, or a frame, whose column ``source`` is no name)."""
    return value.source if isinstance(value, InteractionLog | ContextSet) else default


class DriftCount:
    """The values of a table beyond the range a model reads, summed over the blocks it is
    read in, so that a table read a block at a time (a stream's pieces, a large file's
    slices) is warned once (:class:`~iglearn.errors.DriftWarning`), with the share of the
    whole table, as rows read at once are, rather than once per block with that block's
    share. The caller ignores the blocks' own drift warnings while it reads them."""

    def __init__(self, learner: PolicyLearner):
        self.learner = learner
        self.standardiser = getattr(learner, "standardiser_", None)
        self.beyond: dict[str, np.ndarray] = {}
        self.rows: dict[str, int] = {}

    def add(self, rows: np.ndarray, block: str) -> None:
        """Count the values of ``rows`` (raw, of ``block`` "context" or "feedback") beyond
        the model's limits."""
        if self.standardiser is None:
            return
        beyond = beyond_limits(self.standardiser, rows, block)
        if beyond is None:
            return
        self.beyond[block] = self.beyond.get(block, 0) + beyond
        self.rows[block] = self.rows.get(block, 0) + len(rows)

    def warn(self, source: str) -> None:
        """Warn of each block whose column lies mostly beyond the model's range
        (:func:`~iglearn.data.scaling.drift_message`), naming the table ``source``."""
        for block, beyond in self.beyond.items():
            assert self.standardiser is not None  # counted only with a standardiser
            message = drift_message(self.standardiser, beyond, self.rows[block], block,
                                    source, self.learner.column_names(block))
            if message is not None:
                warn_caller(message, DriftWarning)


class PolicyLearner:
    """Shared behaviour of learners that end with a fitted policy ``policy_``."""

    policy_: Policy
    seconds_: float
    """Wall seconds the fit took (a share of it when fitted side by side)."""
    row_spread: ClassVar[float | None] = ROW_SPREAD
    """The spread of a standardised block's rows (:data:`iglearn.data.scaling.ROW_SPREAD`)
    this learner's defaults are tuned for; None: unit z-scores."""
    origins: ClassVar[Origins] = DEFAULT_ORIGINS
    """Where the zero of the standardised contexts and of the standardised feedback lies for
    this learner's models (:data:`iglearn.data.scaling.ORIGINS`): by default the contexts
    centred and the feedback shifted to non-negative values by its clip limit
    (:attr:`iglearn.data.scaling.Standardiser.feedback_offset`)."""
    standardiser_: Standardiser | None = None
    """The statistics the fit standardised contexts and feedback with
    (:mod:`iglearn.data.scaling`), applied wherever the models read inputs; None: the models
    read raw values (``standardise`` off, or a model saved before standardisation)."""
    n_actions_: int | None = None
    """K of the log the learner was fitted on (None before a fit; a loaded model's is in
    ``metadata_``)."""
    dims_: tuple[int, int] | None = None
    """(d_x, d_y) of the log the learner was fitted on (None before a fit; a loaded model's
    are in ``metadata_``): the widths :meth:`standardised` and :meth:`standardised_feedback`
    accept."""
    if TYPE_CHECKING:  # for the type checker only: typing.get_type_hints must resolve the rest
        metadata_: dict[str, Any]
        """A loaded model's ``model.json`` (set by :func:`iglearn.learners.registry.load_model`)."""
        schema_: FeatureSchema | None
        """The feature schema a model was fitted with, if any."""

    @classmethod
    def _param_names(cls) -> list[str]:
        """The names of the learner's settings: the fields its dataclass ``__init__`` takes
        (``dataclasses.fields`` with ``init``), or the named parameters of an ``__init__`` of
        its own; never a fitted attribute (a name ending in ``_``)."""
        owner = next(c for c in cls.__mro__ if "__init__" in c.__dict__)
        if "__dataclass_fields__" in owner.__dict__:
            names = [f.name for f in dataclasses.fields(cast(Any, cls)) if f.init]
        else:
            kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            init = inspect.signature(owner.__dict__["__init__"])
            names = [p.name for p in list(init.parameters.values())[1:] if p.kind in kinds]
        return [name for name in names if not name.endswith("_")]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The learner's settings by name, as scikit-learn's ``get_params`` gives an
        estimator's (so that ``sklearn.base.clone`` and parameter searches take a learner;
        scikit-learn itself is not needed): the values its constructor took, never the fitted
        attributes (names ending in ``_``). With ``deep``, a setting that is itself a
        dataclass of settings (``optimisation``) also gives each of its own, by
        scikit-learn's convention ``optimisation__lr``.

        The values are the learner's own objects, not copies: a numpy Generator ``seed`` is
        the one the fits draw from. ``sklearn.base.clone`` deep-copies each value, so a clone
        of a learner seeded with a Generator draws from a copy of it in the state it had when
        cloned: a clone of a learner not yet fitted fits as the learner would, and the two
        never share one Generator (which :meth:`fit_many` refuses)."""
        params = {name: getattr(self, name) for name in self._param_names()}
        if deep:
            for name, value in list(params.items()):
                params.update({f"{name}__{inner}": getattr(value, inner)
                               for inner in _nested_names(value)})
        return params

    def set_params(self, **params: Any) -> Self:
        """Change settings by name, as scikit-learn's ``set_params`` does, and return the
        learner. A nested setting is named ``optimisation__lr`` (the learner's optimisation
        with that one value replaced, its other values kept); a whole ``optimisation=...``
        given too is replaced first. The new settings are checked as the constructor checks
        them (``type(learner)(**settings)``, defaults filled in as it fills them), and a name
        the learner does not take or a value it refuses is an error that leaves the learner
        as it was, nothing half-set. A fitted learner keeps its fitted attributes (fit again
        to apply the new settings)."""
        if not params:
            return self
        current = self.get_params(deep=False)
        whole: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, nests, inner = key.partition("__")
            if name not in current:
                raise UnknownSettingError(self._unknown_setting(key, current))
            if nests:
                nested.setdefault(name, {})[inner] = value
            else:
                whole[name] = value
        settings = {**current, **whole}
        for name, changes in nested.items():
            value = settings[name]
            names = _nested_names(value)
            if not names:
                raise UnknownSettingError(
                    f"{type(self).__name__}'s setting {name!r} is {shown(value)}, which has no "
                    f"settings of its own to set by {name}__NAME; pass {name}=... whole")
            unknown = [inner for inner in changes if inner not in names]
            if unknown:
                raise UnknownSettingError(
                    f"{type(self).__name__}'s {name} has no setting {unknown[0]!r}; its "
                    f"settings: {', '.join(names)}")
            settings[name] = dataclasses.replace(value, **changes)
        checked = type(self)(**settings)  # checked as construction checks, or refused here
        for name in current:
            setattr(self, name, getattr(checked, name))
        return self

    def _unknown_setting(self, key: str, current: Mapping[str, Any]) -> str:
        """The one-line message refusing ``key``, a name ``set_params`` does not take."""
        title = type(self).__name__
        for name, value in current.items():
            if key in _nested_names(value):
                return (f"{title} has no setting {key!r}: it is a setting of its {name}; "
                        f"pass {name}__{key}=...")
        nested = [f"{name}__NAME" for name, value in current.items() if _nested_names(value)]
        return (f"{title} has no setting {key!r}; its settings: "
                f"{', '.join(list(current) + nested)}")

    def _fitted_policy(self) -> Policy:
        policy = getattr(self, "policy_", None)
        if policy is None:
            raise IGLearnError(f"{type(self).__name__} is not fitted yet; call fit(log) first")
        return policy

    def check_table(self, table: object, use: str, feedback: bool = False,
                    names: bool = True) -> None:
        """Refuse what ``use`` (the method's name: ``evaluate``, ``indicator``) cannot read:
        anything but a log (in memory or streamed) or, unless ``feedback``, a context set;
        one whose K, widths or feature names (contexts, and the feedback's if ``feedback``)
        are not the fitted model's (:func:`check_compatible`, :func:`check_feature_names`):
        its columns would be read as other features, its actions as other actions. Not
        ``names``: the feature names are not compared (columns already mapped onto the
        model's)."""
        kinds = (InteractionLog, LogStream) if feedback else (InteractionLog, LogStream,
                                                              ContextSet)
        if not isinstance(table, kinds):
            what = "an interaction log" if feedback else "an interaction log or a context set"
            raise IGLearnError(
                f"{use} takes {what}, not a {type(table).__name__}: read a file with "
                f"read_log(path), a data frame with InteractionLog.from_frame(frame, ...)")
        self._fitted_policy()
        k, d_x = self._fitted("n_actions"), self._fitted("context_dim")
        if k is not None and d_x is not None:
            check_compatible(table, k, d_x, self._fitted("feedback_dim") if feedback else None)
        if names:
            check_feature_names(table, getattr(self, "schema_", None),
                                ("context", "feedback") if feedback else ("context",))

    def take_statistics(self, log: InteractionLog | LogStream,
                        feedback: bool = True) -> Standardiser | None:
        """Set ``standardiser_`` to the statistics of ``log`` (of its contexts only unless
        ``feedback``; a streamed log: one extra pass, shown with the learner's ``progress``)
        under the learner's ``standardise``
        setting ("auto": each block off the unit scale only; ``same_unit``: the blocks whose
        columns share one scale), or to None when it is "off";
        returns it. Also keeps the log's K (``n_actions_``) and feature schema (``schema_``:
        its feature names and, for a table read with a column mapping, the columns), which
        :meth:`save` writes and :meth:`contexts_of` reads a DataFrame by."""
        self.n_actions_ = log.n_actions
        self.dims_ = (log.context_dim, log.feedback_dim)
        self.schema_ = getattr(log, "schema", None)
        mode = check_mode(getattr(self, "standardise", "auto"))
        self.standardiser_ = None if mode == "off" else standardiser_of(
            log, feedback, mode, type(self).row_spread, type(self).origins,
            getattr(self, "same_unit", "none"), bool(getattr(self, "progress", False)))
        return self.standardiser_

    def contexts_of(self, context: np.ndarray | pd.DataFrame | InteractionLog | ContextSet
                    ) -> np.ndarray:
        """The context matrix of ``context``: an array as it is; a pandas DataFrame (or a
        polars DataFrame, a pyarrow Table: :func:`~iglearn.data.frames.as_pandas`) read
        as :meth:`ContextSet.from_frame <iglearn.data.contexts.ContextSet.from_frame>` reads
        it, by the columns the model was fitted on (``schema_``: a log read with a column
        mapping, by those names; else iglearn's ``context_0``, ... layout or a ``context``
        column of lists); or a log's or context set's contexts, whose feature names (a DSJSON
        file's, read without the model's schema: in its own order of first appearance) must
        be the model's, in its order. A frame that lacks one of those columns is an error
        naming it."""
        return self._field_of(context, "context")

    def feedback_of(self, feedback: np.ndarray | pd.DataFrame | InteractionLog) -> np.ndarray:
        """The feedback matrix of ``feedback``, as :meth:`contexts_of` reads contexts: an
        array as it is; a DataFrame (or another library's table) by the feedback columns
        the model was fitted on (else iglearn's ``feedback_0``, ... layout), whatever their
        order in the frame; or a log's feedback."""
        return self._field_of(feedback, "feedback")

    def _field_of(self, value: Any, field: str) -> np.ndarray:
        """The matrix of ``field`` ('context' or 'feedback') that ``value`` holds
        (:meth:`contexts_of`, :meth:`feedback_of`)."""
        if isinstance(value, ContextSet) and field == "feedback":
            raise IGLearnError(f"{value.source}: a context set holds no feedback; give a log "
                               f"or the feedback vectors")
        if isinstance(value, InteractionLog | ContextSet):
            if field in ("context", "feedback"):  # named blocks: their names are compared
                check_feature_names(value, getattr(self, "schema_", None), (field,))
            return cast(np.ndarray, getattr(value, field))
        if isinstance(value, LogStream):
            use = ("predict on contexts in memory (read_contexts(path), or iglearn predict "
                   "MODEL FILE --out OUT)" if field == "context"
                   else "decode feedback in memory (read_log(path).feedback)")
            raise IGLearnError(f"{value.source}: a log streamed from disk is for a fit; {use}")
        from iglearn.data.frames import as_pandas, frame_columns, is_table, mapping_of

        if not is_table(value):
            return as_array(value, field, "contexts" if field == "context" else field)
        frame = as_pandas(value, "data frame")  # a polars or pyarrow table: by its names
        schema = getattr(self, "schema_", None)
        names = {str(name) for name in frame.columns}
        if schema is None and not names & {field, f"{field}_0"}:
            d = self._fitted(f"{field}_dim")
            layout = f"{field}_0, ..." if d is None else f"{field}_0, ..., {field}_{d - 1}"
            reader = ("InteractionLog.from_frame(frame, context=...)" if field == "context"
                      else "InteractionLog.from_frame(frame, feedback=...)")
            raise IGLearnError(
                f"data frame: this model was fitted on a log without column names, so it "
                f"reads {field}s as an array (frame.to_numpy(), the columns in the log's "
                f"order) or in iglearn's layout ({layout}); a model fitted on a log read "
                f"with a column mapping ({reader}) reads a frame by its names")
        mapping = mapping_of(None if schema is None else schema.columns,
                             n_actions=self._fitted("n_actions"))
        # the field alone: a missing value of another field is no concern here
        found = frame_columns(frame, mapping, "data frame", (field,), ignorable=False)[0]
        if field not in found:
            entries = getattr(mapping, field)
            where = (f"the column {shown(entries)}" if isinstance(entries, str)
                     else f"the columns {', '.join(map(shown, entries))}" if entries
                     else f"iglearn's layout {field}_0, ... or a column {field!r} of lists")
            raise IGLearnError(f"data frame: no column for field {field!r}; the model reads "
                               f"it from {where}")
        return found[field]

    def _fitted(self, key: str) -> Any:
        """What the fit knew of its log: ``n_actions``, ``context_dim`` or ``feedback_dim``
        (from the fit, or a loaded model's ``model.json``; None if neither says)."""
        metadata = getattr(self, "metadata_", None) or {}
        if key == "n_actions":
            return self.n_actions_ if self.n_actions_ is not None else metadata.get(key)
        if self.dims_ is not None:
            return self.dims_[0 if key == "context_dim" else 1]
        return metadata.get(key)

    def standardised(self, context: np.ndarray | pd.DataFrame | InteractionLog | ContextSet
                     ) -> np.ndarray:
        """Contexts (an array of shape (n, d_x), or a DataFrame: :meth:`contexts_of`) as the
        fitted models read them, checked as a log's are (:func:`~iglearn.data.logs.
        model_rows`: NaN, a wrong width or a single vector is an error naming it):
        standardised with ``standardiser_`` (float32), or as given when there is none."""
        source = _source_of(context, "contexts")
        context = model_rows("context", self.contexts_of(context),
                             self._fitted("context_dim"), "contexts")
        if self.standardiser_ is None:
            return context
        self._warn_drift(context, "context", source)
        return self.standardiser_.apply(context)

    def column_names(self, block: str) -> tuple[str, ...] | None:
        """The names of ``block``'s ("context" or "feedback") columns in the model's feature
        schema, or None (none recorded): what a drift warning names a column by."""
        schema = getattr(self, "schema_", None)
        return None if schema is None else (schema.context if block == "context"
                                            else schema.feedback) or None

    def _warn_drift(self, rows: np.ndarray, block: str, source: str) -> None:
        """Warn (:class:`~iglearn.errors.DriftWarning`) if a column of ``rows`` of ``block``
        lies mostly outside the range of the training log
        (:func:`~iglearn.data.scaling.drift_warning`; columns named by the model's feature
        schema)."""
        assert self.standardiser_ is not None
        warning = drift_warning(self.standardiser_, rows, block, source,
                                self.column_names(block))
        if warning is not None:
            warn_caller(warning, DriftWarning)

    def standardised_feedback(self, feedback: np.ndarray | pd.DataFrame | InteractionLog
                              ) -> np.ndarray:
        """Feedback vectors (an array (n, d_y), a DataFrame or a log: :meth:`feedback_of`)
        as the fitted decoders read them, checked (see :meth:`standardised`)."""
        source = _source_of(feedback, "feedback")
        feedback = model_rows("feedback", self.feedback_of(feedback),
                              self._fitted("feedback_dim"), "feedback")
        if self.standardiser_ is None:
            return feedback
        self._warn_drift(feedback, "feedback", source)
        return self.standardiser_.apply_feedback(feedback)

    def predict_proba(self, context: np.ndarray | pd.DataFrame | InteractionLog | ContextSet
                      ) -> np.ndarray:
        """pi(. | x) for each context (an array, or a DataFrame: :meth:`contexts_of`; raw, as
        in the log; standardised here with the fit's
        statistics), shape (n, K), computed on the learner's ``device`` (if it has one) 65536
        contexts at a time, on its ``threads`` torch threads (1 unless set)."""
        policy = self._fitted_policy()
        context = self.standardised(context)
        device = resolve_device(getattr(self, "device", "cpu"))
        if device.type != "cpu":  # a copy on the device; the fitted policy stays on the CPU
            policy = copy.deepcopy(policy).to(device)
        with torch.no_grad(), torch_threads(getattr(self, "threads", 1), libraries=False):
            parts = [policy.probabilities(as_tensor(context[i:i + _CHUNK]).to(device)).cpu()
                     .numpy() for i in range(0, max(len(context), 1), _CHUNK)]
        return np.concatenate(parts)  # no contexts: one empty part, (0, K)

    def predict(self, context: np.ndarray | pd.DataFrame | InteractionLog | ContextSet
                ) -> np.ndarray:
        """The greedy (argmax) action for each context."""
        return self.predict_proba(context).argmax(1)

    def accuracy(self, context: np.ndarray | pd.DataFrame | InteractionLog | ContextSet,
                 label: np.ndarray) -> float:
        """Fraction of contexts whose greedy action equals the label (one integer action per
        context, checked as a log's labels are; a model fitted on named actions also takes
        the labels as those names, :meth:`label_indices`)."""
        probabilities = self.predict_proba(context)
        values = self.label_indices(label, probabilities.shape[1])
        return label_accuracy(probabilities.argmax(1), values, probabilities.shape[1])

    def label_indices(self, label: np.ndarray, k: int) -> np.ndarray:
        """``label`` as action indices: as given, unless the model was fitted on named
        actions (``schema_.action_names``) and the labels are not all indices 0 to K - 1:
        then each is read as an action's name (words, or numbers such as codes 42, 7, 3),
        as the log's label column was, and one that names no action is an error naming
        it."""
        schema = getattr(self, "schema_", None)
        names = None if schema is None else schema.action_names
        values = as_array(label, "label", "labels")
        if names is None:
            return values
        indices = values.dtype.kind in "biu" or (
            values.dtype.kind == "f" and bool(np.all(np.isfinite(values)))
            and bool(np.all(values == np.round(values))))
        if indices and values.size and values.min() >= 0 and values.max() < k:
            return values
        from iglearn.data.frames import action_indices

        return action_indices("label", values, tuple(names), "labels")


class StackableLearner(PolicyLearner):
    """A learner whose fits can run side by side: ``fit_many`` fits several learners of one
    class and settings (seeds may differ) on logs of one shape as one batched computation
    (:mod:`iglearn.learners.trials`), each ending with the model it would have had alone, up
    to floating-point rounding. Subclasses implement ``_fit_stacked(learners, logs)``."""

    seed: SeedLike

    def fit(self, log: InteractionLog | LogStream) -> Self:
        """Fit on ``log``: in memory, or streamed from disk (:func:`iglearn.data.stream.open_log`
        chooses by size)."""
        with torch_threads(getattr(self, "threads", 1)):
            type(self)._fit_stacked([self], [log])
        return self

    @classmethod
    def fit_many(cls, learners: Sequence[Self],
                 logs: Sequence[InteractionLog | LogStream]) -> list[Self]:
        """Fit ``learners[t]`` on ``logs[t]`` for every t as one batched computation.

        The learners must be of one class with the same settings (their seeds may differ) and
        the logs must share their number of interactions, dimensions and actions. Each
        learner ends as ``learners[t].fit(logs[t])`` would leave it, up to floating-point
        rounding (the batched kernels may round differently from the single-trial ones), in
        less time than fitting them one after another; their ``seconds`` share the wall
        time equally. Where a fit's outcome turns on small differences (a few hundred
        interactions of many inputs), the rounding can take a fit another way."""
        learners = list(learners)
        logs = list(logs)
        if not learners or len(learners) != len(logs):
            raise IGLearnError(f"fit_many needs one log per learner; got {len(learners)} "
                               f"learners and {len(logs)} logs")
        place = next((t for t, learner in enumerate(learners) if not isinstance(learner, cls)),
                     None)
        if place is not None:
            stranger = learners[place]
            kind = type(stranger).__name__
            how = (f"fit those with {kind}.fit_many" if isinstance(stranger, StackableLearner)
                   else "fit it on its own with fit(log)" if callable(getattr(stranger, "fit",
                                                                               None))
                   else f"give {cls.__name__} learners ([{cls.__name__}(seed=s) for s in "
                        f"seeds])")
            raise IGLearnError(f"{cls.__name__}.fit_many fits {cls.__name__} learners, but "
                               f"learners[{place}] is of type {kind}; {how}")
        check_log_types(logs)
        first, shape = learners[0], _shape(logs[0])
        for learner, log in zip(learners, logs, strict=True):
            if type(learner) is not type(first) or _settings(learner) != _settings(first):
                raise IGLearnError("fit_many fits learners of one class and settings (seeds "
                                   "may differ); fit the others separately")
            if _shape(log) != shape:
                raise IGLearnError(f"{log.source}: fit_many needs logs of one shape "
                                   f"(interactions, context and feedback dimensions, "
                                   f"actions); got {_shape(log)}, expected {shape}")
        if len({id(learner) for learner in learners}) < len(learners):
            raise IGLearnError("fit_many: one learner is listed more than once, and each fit "
                               "would replace the one before; give each log a learner of its "
                               "own ([BatchIGL(seed=s) for s in seeds], not [learner] * n)")
        shared = [learner.seed for learner in learners
                  if isinstance(learner.seed, np.random.Generator)]
        if len({id(generator) for generator in shared}) < len(shared):
            raise IGLearnError("fit_many: several learners share one numpy Generator as their "
                               "seed; give each its own seed (an int, a SeedSequence or a "
                               "Generator of its own)")
        with torch_threads(getattr(first, "threads", 1)):
            type(first)._fit_stacked(learners, logs)
        return learners

    @classmethod
    def _fit_stacked(cls, learners: list[Self], logs: list[InteractionLog | LogStream]) -> None:
        raise NotImplementedError

    @classmethod
    def _fit_kinds_apart(cls, learners: list[Self], logs: list[InteractionLog | LogStream],
                         scalers: Sequence[Standardiser | None]) -> bool:
        """Where some of ``learners`` read their feedback standardised and others as it was
        logged (``scalers``, their statistics: :func:`~iglearn.data.scaling.
        standardised_feedback`), whose decoders decay differently, fit each kind side by side
        on its own (``_fit_stacked``) and return True; else return False, fitting nothing."""
        kinds = [standardised_feedback(scaler) for scaler in scalers]
        if len(set(kinds)) < 2:
            return False
        for kind in (False, True):
            group = [t for t, own in enumerate(kinds) if own == kind]
            cls._fit_stacked([learners[t] for t in group], [logs[t] for t in group])
        return True


def diverged_models(models: Mapping[str, torch.nn.Module | Iterable[torch.nn.Module] | None]
                    ) -> list[str]:
    """The names of ``models`` (a module, several, or None: not fitted yet) that hold a NaN or
    infinite parameter."""
    return [name for name, model in models.items() if model is not None
            and not all(bool(p.isfinite().all())
                        for part in ([model] if isinstance(model, torch.nn.Module) else model)
                        for p in part.parameters())]


def check_finite_fit(log: InteractionLog | LogStream,
                     models: Mapping[str, torch.nn.Module | Iterable[torch.nn.Module]],
                     values: Mapping[str, float] | None = None) -> None:
    """Refuse the fit of ``log`` whose fitted ``models`` (by name: a module or several) hold a
    NaN or infinite parameter, or one of whose ``values`` (by name: the indicator) is not
    finite: it diverged, and the policy's actions would be arbitrary. The message names what
    diverged and what to change."""
    broken = [f"its {name} is {value}" for name, value in (values or {}).items()
              if not math.isfinite(value)]
    names = diverged_models(models)
    if names:
        broken.append(f"NaN or infinite values in its {' and '.join(names)}")
    if broken:
        raise IGLearnError(
            f"{log.source}: the fit diverged ({'; '.join(broken)}); the smallest logged "
            f"probability is {min_probability(log):.3g} (importance weight 1/p): drop or clip "
            f"near-zero probabilities, or lower the learning rate")


def log_warnings(log: InteractionLog | LogStream) -> list[str]:
    """The warnings of a log itself, before any fit: actions it never shows
    (:func:`unseen_action_warnings`) and logged probabilities that do not fit its logged
    actions (:func:`~iglearn.data.logs.probability_warning`, the check ``evaluate`` makes).
    Every learner that decodes the feedback (2021 IGL, AI-IGL, IGL-P, VI-IGL) warns them
    before its own warnings, so that a fit on a wrong probability column says so instead of
    blaming the task; the contextual bandit warns the probabilities' alone."""
    warning = probability_warning(weight_sums(log), len(log), log.source)
    return unseen_action_warnings(log) + ([] if warning is None else [warning])


def unseen_action_warnings(log: InteractionLog | LogStream) -> list[str]:
    """The warning of a log that never shows some of its K actions (by their names, where its
    feature schema names them), or none."""
    k = log.n_actions
    missing = np.flatnonzero(action_counts(log) == 0).tolist()
    if not missing:
        return []
    schema = getattr(log, "schema", None)
    names = None if schema is None else schema.action_names
    shown = ", ".join(str(a) if names is None else f"{a} ({names[a]!r})"
                      for a in missing[:5]) + (", ..." if len(missing) > 5 else "")
    which = (f"action {shown} never occurs" if len(missing) == 1
             else f"actions {shown} never occur")
    return [f"{log.source}: n_actions is {k} but {which} in the log; a fit assumes K = {k} "
            f"actions, each played with probability 1/{k} under uniform play, and learns "
            f"nothing of an action it never saw: check n_actions, or, if the logging policy "
            f"never played {'it' if len(missing) == 1 else 'them'}, log with exploration"]


def _shape(log: InteractionLog | LogStream) -> tuple[int, ...]:
    return len(log), log.context_dim, log.feedback_dim, log.n_actions


def _settings(learner: object) -> dict:
    return {k: v for k, v in vars(learner).items() if k != "seed" and not k.endswith("_")}


def _nested_names(value: object) -> list[str]:
    """The settings of ``value`` when it is a dataclass instance of settings (an
    :class:`~iglearn.learners.settings.Optimisation`), which ``get_params(deep=True)`` and
    ``set_params`` name as ``setting__name``; none otherwise."""
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return []
    return [f.name for f in dataclasses.fields(value) if f.init]


class Orientable:
    """A learner with one decoder (``BatchIGL``, ``VIIGL``) whose two-action fit's direction
    can be chosen from interactions whose reward is known."""

    def orient(self, labelled: InteractionLog) -> Oriented:
        """Choose a two-action fit's direction from interactions whose reward is known (a
        calibration session's trials, whose right answer the person was told): with K = 2
        the sign of the decoded reward is not identified (the fit warns), and where the
        decoded reward matches the known one on fewer than half of ``labelled``'s
        interactions, the decoder is flipped and the policy's scores negated, which for two
        actions picks each context's other action
        (:func:`~iglearn.learners.corrector.orient_by_rewards`). ``labelled``: a log with
        a ``reward`` or a ``label`` column; not fitted on. Returns the rows read, the
        agreement after the choice and whether it flipped; ``save`` keeps the direction."""
        from iglearn.learners.corrector import orient_by_rewards

        learner = cast(Any, self)  # a fitted BatchIGL or VIIGL
        reward = known_rewards(learner, labelled)
        oriented = orient_by_rewards(learner._fitted_policy(), learner.decoder_,
                                     learner.decode(labelled.feedback), reward)
        chance_warning(oriented.agreement, oriented.rows)
        return oriented


ORIENT_SIGMAS = 2.0
"""How many standard errors (of the share of n interactions, 0.5 / sqrt(n) at one half) the
agreement after ``orient``'s choice must lie above one half, the agreement of a direction
chosen at random, for the choice to be told apart from chance (:func:`chance_warning`)."""


def chance_warning(agreement: float, rows: int, what: str = "") -> None:
    """Warn when ``orient``'s choice of a direction (``what``: of which decoder) rests on
    too few interactions to be told apart from chance: the ``agreement`` after it, on
    ``rows`` interactions whose reward is known, lies within :data:`ORIENT_SIGMAS` standard
    errors of one half (1 row at 100 %, 10 at 80 %, 30 at 68 % do)."""
    if agreement - 0.5 > ORIENT_SIGMAS * 0.5 / math.sqrt(rows):
        return
    warn_caller(f"orient{what}: the decoded reward agrees with the known one on "
                f"{agreement:.0%} of {rows} interaction{'s' if rows != 1 else ''}, within "
                f"{ORIENT_SIGMAS:g} standard errors of the 50% a direction chosen at random "
                f"agrees on, so the direction chosen may be the wrong one; orient on more "
                f"interactions whose reward is known (and check their reward or label)")


def known_rewards(learner: PolicyLearner, labelled: InteractionLog) -> np.ndarray:
    """The known reward of each interaction of ``labelled``, by which ``orient`` chooses a
    fitted two-action ``learner``'s direction: its ``reward``, else its ``label`` (the reward
    is then the logged action being the label). Refuses another K, and a log with neither."""
    learner._fitted_policy()
    if not isinstance(labelled, InteractionLog):
        raise IGLearnError(f"orient reads an InteractionLog in memory (its actions, feedback "
                           f"and rewards or labels), got {type(labelled).__name__}")
    n_actions = learner.n_actions_ or labelled.n_actions
    if labelled.n_actions != 2 or n_actions != 2:
        k = labelled.n_actions if labelled.n_actions != 2 else n_actions
        raise IGLearnError(f"orient chooses the direction of a two-action fit's decoded "
                           f"reward; with K = {k} the corrector chooses it from the share of "
                           f"feedback decoded as reward (Appendix B)")
    if labelled.reward is not None:
        reward = np.asarray(labelled.reward)
    elif labelled.label is not None:
        reward = (np.asarray(labelled.action) == np.asarray(labelled.label)).astype(np.float32)
    else:
        raise IGLearnError(f"{labelled.source}: orient needs interactions whose reward is "
                           f"known: a 'reward' column, or a 'label' column (the right action)")
    if len(reward) == 0:
        raise IGLearnError(f"{labelled.source}: no interaction to orient the decoder by")
    return reward
