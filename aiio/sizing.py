"""GPU and storage sizing: the arithmetic behind `aiio size`.

Pure arithmetic on numbers, plus readers for the data it needs (the accelerator table, a
workload, result JSON). Nothing here measures or prints: `size()` returns a `Sizing` of rows
(label, value, unit, formula with the numbers filled in) that the CLI renders as tables or JSON.
docs/SIZING.md explains every formula and default.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiio import result
from aiio.errors import AiioError, ConfigError
from aiio.result import Result, dig, number
from aiio.units import GiB, MiB
from aiio.workload import Workload, load_workload, workload_folders, workloads_dir

SIZING_SCHEMA = "aiio.sizing/1"
SECONDS_PER_DAY = 86400.0
DEFAULT_MFU = 0.4
DEFAULT_BYTES_PER_TOKEN = 4.0  # Llama 3's 128,256-token vocabulary needs 32-bit token ids
DEFAULT_RETENTION = 3
DEFAULT_CHECKPOINT_INTERVAL = 3600.0
DEFAULT_STALL_BUDGET = 0.05
DEFAULT_REPLICAS = 1
DEFAULT_LOAD_TIME = 60.0
TRANSFORMER_FLOPS_PER_PARAM_TOKEN = 6  # forward 2 + backward 4 multiply-adds per parameter

# Bytes per parameter held in accelerator memory while training, by precision. Mixed bf16
# keeps an fp32 master copy for the optimizer to update; plain fp32 needs none.
PRECISIONS: dict[str, list[tuple[str, str, int]]] = {
    "bf16": [("weights", "weights (bf16)", 2), ("gradients", "gradients (bf16)", 2),
             ("master", "master weights (fp32)", 4)],
    "fp32": [("weights", "weights (fp32)", 4), ("gradients", "gradients (fp32)", 4)],
}
# Optimizer state per parameter, kept in fp32.
OPTIMIZERS: dict[str, list[tuple[str, str, int]]] = {
    "adam": [("adam_m", "Adam first moment m (fp32)", 4),
             ("adam_v", "Adam second moment v (fp32)", 4)],
    "sgd": [("momentum", "SGD momentum (fp32)", 4)],
}
ACCELERATOR_KEYS = {"name": str, "memory_gib": (int, float), "bf16_tflops": (int, float),
                    "source": str}


# --- the accelerator table ----------------------------------------------------------------

@dataclass(frozen=True)
class Accelerator:
    """One accelerator type: memory and dense bf16 peak, with where the numbers come from."""

    key: str
    name: str
    memory_gib: float
    bf16_tflops: float
    source: str

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GiB

    @property
    def peak_flops(self) -> float:
        """Dense bf16 peak in FLOP/s."""
        return self.bf16_tflops * 1e12


def accelerators_path() -> Path:
    """hardware/accelerators.toml of the first workload folder that has one (a user's own
    folder can replace the shipped table)."""
    for _, folder in workload_folders():
        if (folder / "hardware" / "accelerators.toml").is_file():
            return folder / "hardware" / "accelerators.toml"
    return workloads_dir() / "hardware" / "accelerators.toml"


def load_accelerators(path: Path | None = None) -> dict[str, Accelerator]:
    """Read and check the accelerator table; unknown or missing keys name the file and entry."""
    path = path or accelerators_path()
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read the accelerator table {path}: {exc}") from exc
    return {key.lower(): _accelerator(key.lower(), entry, f"{path} [{key}]")
            for key, entry in data.items()}


def _accelerator(key: str, entry: Any, where: str) -> Accelerator:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = set(entry) - set(ACCELERATOR_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r}; "
                          f"known: {', '.join(ACCELERATOR_KEYS)}")
    for name, kind in ACCELERATOR_KEYS.items():
        value = entry.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ConfigError(f"{where}: {name} is missing or not a {_kind_name(kind)}")
        if not isinstance(value, str) and value <= 0:
            raise ConfigError(f"{where}: {name} = {value} must be greater than 0")
    return Accelerator(key=key, name=entry["name"], memory_gib=float(entry["memory_gib"]),
                       bf16_tflops=float(entry["bf16_tflops"]), source=entry["source"])


def _kind_name(kind: Any) -> str:
    return "string" if kind is str else "number"


def find_accelerator(name: str, table: dict[str, Accelerator]) -> Accelerator:
    """The table entry for a name such as 'H100' (case does not matter)."""
    found = table.get(name.strip().lower())
    if found is None:
        raise ConfigError(f"unknown accelerator {name!r}; known: {', '.join(sorted(table))} "
                          f"(add it to {accelerators_path()})")
    return found


# --- the formulas ---------------------------------------------------------------------------

def memory_parts(precision: str, optimizer: str) -> list[tuple[str, str, int]]:
    """(key, label, bytes per parameter) of each part of one replica's training state."""
    if precision not in PRECISIONS:
        raise ConfigError(f"unknown precision {precision!r}; known: {', '.join(PRECISIONS)}")
    if optimizer not in OPTIMIZERS:
        raise ConfigError(f"unknown optimizer {optimizer!r}; known: {', '.join(OPTIMIZERS)}")
    return PRECISIONS[precision] + OPTIMIZERS[optimizer]


def weight_bytes_per_parameter(precision: str) -> int:
    """Bytes per parameter of the weights alone: what an inference replica loads."""
    return dict((k, b) for k, _, b in PRECISIONS[precision])["weights"]


def shards_for(state_bytes: float, memory_bytes: float) -> int:
    """Fewest accelerators whose memory together holds the state (activations not counted)."""
    return max(1, _ceil(state_bytes / memory_bytes))


def training_flops(parameters: float, tokens: float) -> float:
    """Transformer training work: 6 x parameters x tokens."""
    return TRANSFORMER_FLOPS_PER_PARAM_TOKEN * parameters * tokens


def transformer_accelerator_seconds(flops: float, peak_flops: float, mfu: float) -> float:
    """Accelerator-seconds to do the work at a fraction `mfu` of peak."""
    return flops / (peak_flops * mfu)


def tokens_per_second(parameters: float, peak_flops: float, mfu: float) -> float:
    """Tokens one accelerator trains per second at `mfu`."""
    return peak_flops * mfu / (TRANSFORMER_FLOPS_PER_PARAM_TOKEN * parameters)


def steps(epochs: float, samples: float, batch: float) -> float:
    """Per-accelerator batches over all epochs: epochs x samples / batch."""
    return epochs * samples / batch


def workload_accelerator_seconds(n_steps: float, compute_time: float, au: float) -> float:
    """Accelerator-seconds for batches of measured compute time, busy a fraction `au`."""
    return n_steps * compute_time / au


def accelerators_for(accelerator_seconds: float, budget_seconds: float) -> int:
    """Fewest accelerators that finish the work within the budget."""
    return max(1, _ceil(accelerator_seconds / budget_seconds))


def demand_mib_s(batch: float, sample_size: float, compute_time: float) -> float:
    """Read rate one accelerator needs: batch x mean sample size / compute time."""
    return batch * sample_size / MiB / compute_time


def checkpoint_write_mib_s(checkpoint_bytes: float, interval_s: float, budget: float) -> float:
    """Write rate that keeps each checkpoint's stall within budget x interval."""
    return checkpoint_bytes / MiB / (interval_s * budget)


def load_mib_s(replicas: int, weight_bytes: float, load_time_s: float) -> float:
    """Read rate for `replicas` cold replicas to each read the weights within the time."""
    return replicas * weight_bytes / MiB / load_time_s


def _ceil(x: float) -> int:
    # round first so 24.000000000001 from float arithmetic does not become 25
    return math.ceil(round(x, 6))


def fmt(value: float) -> str:
    """A number as the tables print it: 3,030 / 912.7 / 0.323 / 8.4e+11."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (value.is_integer() and abs(value) < 1e9):
        return f"{int(value):,}"
    if value != 0 and (abs(value) >= 1e9 or abs(value) < 1e-3):
        return f"{value:.3g}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:,.1f}"
    return f"{value:.3g}"


def fmt_count(value: float) -> str:
    """A large count as people write it: 70B, 2T, 8.03B, 168."""
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if abs(value) >= div:
            return f"{value / div:.4g}{suffix}"
    return f"{value:,.0f}"


# --- results written by the measuring side ------------------------------------------------

@dataclass(frozen=True)
class TrainPoint:
    """One measured client count from a train run or sweep."""

    clients: int
    au_pass: bool
    first_done_mib_s: float


@dataclass(frozen=True)
class MeasuredTrain:
    """What a train result says about the storage: per point, did every client meet AU?"""

    source: str
    kind: str
    workload: str
    accelerator: str
    au_goal: float
    demand_mib_s: float  # per accelerator of the measured type
    points: tuple[TrainPoint, ...]
    warnings: tuple[str, ...] = ()

    @property
    def largest_passing(self) -> int | None:
        passing = [p.clients for p in self.points if p.au_pass]
        return max(passing) if passing else None

    @property
    def peak(self) -> TrainPoint:
        return max(self.points, key=lambda p: p.first_done_mib_s)

    @property
    def saturated(self) -> bool:
        """Some point missed the AU goal, so the storage (or the clients) ran out."""
        return any(not p.au_pass for p in self.points)


@dataclass(frozen=True)
class MeasuredCheckpoint:
    """Aggregate checkpoint write rate from a checkpoint result (None when it is missing)."""

    source: str
    clients: int
    write_mib_s: float | None
    note: str = ""
    warnings: tuple[str, ...] = ()


def read_result(path: str) -> Result:
    """The run or sweep result at --from PATH (a result.json or its folder), either schema."""
    try:
        res = result.load(path)
    except AiioError as exc:
        raise ConfigError(f"--from {path}: {exc}") from None
    if res.kind not in ("run", "sweep"):
        raise ConfigError(f"--from {res.path}: kind {res.kind!r} is neither run nor sweep")
    return res


def _get(doc: Any, dotted: str, where: str) -> Any:
    """A recorded value by its dotted path, or a one-line error naming the missing field."""
    value = dig(doc, *dotted.split("."), default=_MISSING)
    if value is _MISSING:
        raise ConfigError(f"--from {where}: the result has no {dotted}")
    return value


_MISSING = object()


def _number(doc: Any, dotted: str, where: str) -> float:
    value = _get(doc, dotted, where)
    if number(value) is None:
        raise ConfigError(f"--from {where}: {dotted} = {value!r} is not a number")
    return float(value)


def _runs(res: Result, where: str) -> list[tuple[int, Result]]:
    """(client count, run result) for a run, or for each point of a sweep."""
    if res.kind == "run":
        return [(len(_get(res, "clients", where)), res)]
    points = _get(res, "points", where)
    if not isinstance(points, list) or not points:
        raise ConfigError(f"--from {where}: the sweep has no points")
    for p in points:
        _get(p, "result", where)  # a point without its run result is named, not skipped
    return [(int(_number(p, "clients", where)), run)
            for p, run in zip(points, res.points, strict=True)]


def measured_train(res: Result, where: str) -> MeasuredTrain:
    """Summarize a train run or sweep: per point, AU pass and first-done aggregate MiB/s."""
    runs = _runs(res, where)
    first = runs[0][1]
    accel = str(_get(first, "workload.train.accelerator", where))
    compute = _number(first, f"workload.train.compute_time.{accel}", where)
    demand = demand_mib_s(_number(first, "workload.train.batch_size", where),
                          _number(first, "workload.dataset.sample_size", where), compute)
    au_goal = _number(first, "workload.train.au_goal", where)
    points = tuple(TrainPoint(n, _au_pass(run, au_goal, where), _first_done(run, where))
                   for n, run in runs)
    name = str(_get(first, "workload.workload.name", where))
    return MeasuredTrain(source=where, kind=res.kind, workload=name, accelerator=accel,
                         au_goal=au_goal, demand_mib_s=demand, points=points,
                         warnings=result_warnings(run for _, run in runs))


def _first_done(run: Result, where: str) -> float:
    """The run's first-done aggregate read rate: its 'read' section (the headline)."""
    section = run.section("read")
    if section is None or section.first_done is None:
        raise ConfigError(f"--from {where}: the result has no aggregate.first_done.mib_s")
    return section.first_done.mib_s


def result_warnings(runs: Any) -> tuple[str, ...]:
    """The distinct warnings the measuring side attached to these runs, in order."""
    seen: dict[str, None] = {}
    for run in runs:
        for warning in run.warnings:
            if warning.message:
                seen.setdefault(warning.message, None)
    return tuple(seen)


def _au_pass(run: Result, au_goal: float, where: str) -> bool:
    """The run's own verdict, or every client's AU against the goal when it has none."""
    verdict = dig(run, "aggregate", "au_pass")
    if isinstance(verdict, bool):
        return verdict
    clients = _get(run, "clients", where)
    return bool(clients) and all(_number(c, "au", where) >= au_goal for c in clients)


def measured_checkpoint(res: Result, where: str) -> MeasuredCheckpoint:
    """The best aggregate write rate of a checkpoint run or sweep: the checkpoint phase's
    `write_mib_s`, all bytes over the windows until every client's shard was durable."""
    runs = _runs(res, where)
    warnings = result_warnings(run for _, run in runs)
    best: MeasuredCheckpoint | None = None
    for n, run in runs:
        rate = number(dig(run, "aggregate", "write_mib_s"))
        if rate is not None and rate > 0:
            if best is None or rate > best.write_mib_s:
                best = MeasuredCheckpoint(where, n, rate, warnings=warnings)
    if best is None:
        return MeasuredCheckpoint(where, 0, None, f"{where} has no aggregate.write_mib_s;"
                                  " checkpoint time not computed", warnings)
    return best


# --- what the user asks ---------------------------------------------------------------------

@dataclass(frozen=True)
class SizingInputs:
    """Everything `aiio size` takes; None means not given (a default or 'not computed')."""

    model: str | None = None
    workload: str | None = None
    accelerator: str | None = None
    parameters: float | None = None
    tokens: float | None = None
    days: float | None = None
    gpus: int | None = None
    mfu: float | None = None
    epochs: int | None = None
    precision: str = "bf16"
    optimizer: str = "adam"
    bytes_per_token: float = DEFAULT_BYTES_PER_TOKEN
    dataset_size: float | None = None
    prep_copies: float = 1.0
    retention: int = DEFAULT_RETENTION
    checkpoint_interval: float = DEFAULT_CHECKPOINT_INTERVAL
    stall_budget: float = DEFAULT_STALL_BUDGET
    replicas: int = DEFAULT_REPLICAS
    load_time: float = DEFAULT_LOAD_TIME
    results: tuple[str, ...] = ()

    def check(self) -> None:
        """Missing, contradictory or impossible inputs: one ConfigError naming what is needed."""
        if self.model is None and self.workload is None:
            raise ConfigError("give --model (e.g. llama3-70b) or --workload (e.g. unet3d)")
        if self.model is not None and self.workload is not None:
            raise ConfigError("give --model or --workload, not both (a model preset is sized "
                              "by tokens, a workload by epochs)")
        self._check_numbers()
        if self.model is not None:
            if self.epochs is not None:
                raise ConfigError("--epochs applies to --workload; for a model give --tokens")
            if self.days is not None and self.tokens is None:
                raise ConfigError("--days needs --tokens for a model: the work is 6 x parameters"
                                  " x tokens (e.g. --tokens 2T)")
        elif self.tokens is not None:
            raise ConfigError("--tokens applies to --model; a workload counts work in --epochs")
        memory_parts(self.precision, self.optimizer)

    def _check_numbers(self) -> None:
        positive = {"--parameters": self.parameters, "--tokens": self.tokens,
                    "--days": self.days, "--gpus": self.gpus, "--epochs": self.epochs,
                    "--bytes-per-token": self.bytes_per_token,
                    "--checkpoint-interval": self.checkpoint_interval,
                    "--load-time": self.load_time, "--retention": self.retention}
        for option, value in positive.items():
            if value is not None and not value > 0:
                raise ConfigError(f"{option} = {value} must be greater than 0")
        at_least_zero = {"--dataset-size": self.dataset_size, "--prep-copies": self.prep_copies,
                         "--replicas": self.replicas}
        for option, value in at_least_zero.items():
            if value is not None and value < 0:
                raise ConfigError(f"{option} = {value} must not be negative")
        for option, value in (("--mfu", self.mfu), ("--stall-budget", self.stall_budget)):
            if value is not None and not 0 < value <= 1:
                raise ConfigError(f"{option} = {value} must be a fraction in (0, 1], "
                                  "e.g. 0.4 or 40%")


# --- the answer -----------------------------------------------------------------------------

@dataclass
class Row:
    """One line of a table: a named quantity, its value and unit, and how it was computed."""

    key: str
    label: str
    value: Any
    unit: str = ""
    formula: str = ""


SECTIONS = ("inputs", "memory", "compute", "storage", "measured")


@dataclass
class Sizing:
    """The answer: rows per section, verdict sentences and notes."""

    title: str
    sections: dict[str, list[Row]] = field(default_factory=lambda: {s: [] for s in SECTIONS})
    verdict: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, section: str, key: str, label: str, value: Any, unit: str = "",
            formula: str = "") -> Any:
        self.sections[section].append(Row(key, label, value, unit, formula))
        return value

    def value(self, key: str) -> Any:
        """A row's value by key (KeyError if absent)."""
        for rows in self.sections.values():
            for row in rows:
                if row.key == key:
                    return row.value
        raise KeyError(key)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SIZING_SCHEMA,
            "title": self.title,
            "values": {r.key: r.value for rows in self.sections.values() for r in rows},
            "sections": {name: [dataclasses.asdict(r) for r in rows]
                         for name, rows in self.sections.items() if rows},
            "verdict": self.verdict,
            "notes": self.notes,
        }


def size(inputs: SizingInputs) -> Sizing:
    """Size compute and storage for a model or workload; compare with results if given."""
    inputs.check()
    sizer = _Sizer(inputs)
    sizer.inputs()
    sizer.memory()
    sizer.compute()
    sizer.storage()
    sizer.measured()
    return sizer.out


def _has_section(source: str, section: str) -> bool:
    """Whether the workload file itself has [section] (defaults fill it in otherwise)."""
    with Path(source).open("rb") as fh:
        return section in tomllib.load(fh)


class _Sizer:
    """Works through the sections in order; later sections use earlier results."""

    def __init__(self, inp: SizingInputs):
        self.inp = inp
        self.is_model = inp.model is not None
        self.w = self._workload()
        self.acc = find_accelerator(inp.accelerator or self.w.train.accelerator,
                                    load_accelerators())
        if not self.is_model:
            self.w = self._with_accelerator(self.w, self.acc.key)
        self.params = inp.parameters or self.w.model.parameters or None
        self.mfu = inp.mfu if inp.mfu is not None else DEFAULT_MFU
        self.epochs = inp.epochs or self.w.train.epochs
        self.samples = self._samples()
        self.train, self.checkpoint = self._results()
        self.out = Sizing(title=self._title())
        self.shards: int | None = None
        self.accel_seconds: float | None = None
        self.n: int | None = None  # accelerators the storage must serve
        self.checkpoint_bytes: float | None = None
        self.demand: float | None = None

    def _workload(self) -> Workload:
        name = self.inp.model or self.inp.workload
        w = load_workload(name)
        if self.is_model and not (self.inp.parameters or w.model.parameters):
            raise ConfigError(f"{name} has no model.parameters; give --parameters (e.g. 70B) "
                              f"or size it with --workload {name}")
        if not self.is_model and not _has_section(w.source, "train"):
            raise ConfigError(f"workload {name} has no [train] section; size a model preset "
                              f"with --model {name}")
        return w

    def _samples(self) -> int:
        """Samples in the dataset: the workload's, or as many as --dataset-size holds."""
        if self.inp.dataset_size is None:
            return self.w.num_samples
        return max(1, int(self.inp.dataset_size // self.w.dataset.sample_size))

    def _with_accelerator(self, w: Workload, key: str) -> Workload:
        if key not in w.train.compute_time:
            known = ", ".join(sorted(w.train.compute_time))
            raise ConfigError(f"workload {w.name} has a compute time per batch only for {known};"
                              " pick one with --accelerator")
        return dataclasses.replace(w, train=dataclasses.replace(w.train, accelerator=key))

    def _results(self) -> tuple[MeasuredTrain | None, MeasuredCheckpoint | None]:
        train = checkpoint = None
        for path in self.inp.results:
            doc = read_result(path)
            where, phase = str(doc.path), doc.phase
            if phase == "train":
                if train is not None:
                    raise ConfigError("--from: give one train result or sweep, not two")
                train = measured_train(doc, where)
                self._check_same_workload(train)
            elif phase == "checkpoint":
                if checkpoint is not None:
                    raise ConfigError("--from: give one checkpoint result or sweep, not two")
                checkpoint = measured_checkpoint(doc, where)
            else:
                raise ConfigError(f"--from {where}: a {phase!r} result; sizing reads train and "
                                  "checkpoint results")
        return train, checkpoint

    def _check_same_workload(self, train: MeasuredTrain) -> None:
        # a read rate measured with one workload's access pattern says little about another's
        if train.workload != self.w.name:
            raise ConfigError(f"--from {train.source} measured workload {train.workload!r}; "
                              f"size it with --workload {train.workload} or give a "
                              f"{self.w.name} result")

    def _title(self) -> str:
        what = f"model {self.w.name}" if self.is_model else f"workload {self.w.name}"
        return f"aiio size: {what} on {self.acc.name}"

    # --- sections ---------------------------------------------------------------------

    def inputs(self) -> None:
        add, inp, w, acc = self.out.add, self.inp, self.w, self.acc
        add("inputs", "name", "model" if self.is_model else "workload", w.name, "", w.source)
        add("inputs", "accelerator", "accelerator", acc.key, "", acc.name)
        add("inputs", "accelerator_memory_gib", "accelerator memory", acc.memory_gib, "GiB",
            "accelerators.toml")
        add("inputs", "accelerator_bf16_tflops", "accelerator bf16 dense peak",
            acc.bf16_tflops, "TFLOP/s", "accelerators.toml")
        add("inputs", "accelerator_source", "accelerator figures from", "accelerators.toml",
            "", acc.source)
        add("inputs", "parameters", "parameters", self.params, "parameters",
            "--parameters" if inp.parameters else ("model.parameters" if self.params
                                                   else "not given (--parameters)"))
        if self.is_model:
            add("inputs", "tokens", "training tokens", inp.tokens, "tokens", "--tokens")
            add("inputs", "mfu", "model FLOPs utilization (MFU)", self.mfu, "",
                "--mfu" if inp.mfu is not None else "default")
            add("inputs", "bytes_per_token", "dataset bytes per token", inp.bytes_per_token,
                "B", "--bytes-per-token (32-bit token ids by default)")
        else:
            self._workload_inputs()
        add("inputs", "days", "time budget", inp.days, "days", "--days")
        add("inputs", "gpus", "accelerators given", inp.gpus, "accelerators", "--gpus")
        add("inputs", "precision", "training precision", inp.precision, "", "--precision")
        add("inputs", "optimizer", "optimizer", inp.optimizer, "", "--optimizer")
        add("inputs", "checkpoint_bytes_per_parameter", "checkpoint bytes per parameter",
            w.model.bytes_per_parameter, "B", "model.bytes_per_parameter")
        add("inputs", "retention", "checkpoints kept", inp.retention, "", "--retention")
        add("inputs", "checkpoint_interval_h", "checkpoint interval",
            inp.checkpoint_interval / 3600, "hours", "--checkpoint-interval")
        add("inputs", "stall_budget_pct", "checkpoint stall budget", inp.stall_budget * 100,
            "% of training time", "--stall-budget")
        add("inputs", "prep_copies", "prep output", inp.prep_copies, "dataset copies",
            "--prep-copies")
        add("inputs", "replicas", "inference replicas", inp.replicas, "", "--replicas")
        add("inputs", "load_time_s", "load time target", inp.load_time, "s", "--load-time")

    def _workload_inputs(self) -> None:
        add, w = self.out.add, self.w
        add("inputs", "epochs", "epochs", self.epochs,
            "", "--epochs" if self.inp.epochs else "train.epochs")
        add("inputs", "samples", "samples in the dataset", self.samples, "samples",
            f"{w.dataset.num_files:,} files x {w.dataset.samples_per_file:,} samples"
            if self.inp.dataset_size is None else "--dataset-size / mean sample size")
        add("inputs", "sample_size_b", "mean sample size", w.dataset.sample_size, "B",
            "dataset.sample_size")
        add("inputs", "batch_size", "batch per accelerator", w.train.batch_size, "samples",
            "train.batch_size")
        add("inputs", "compute_time_s", f"compute time per batch on {self.acc.key}",
            w.compute_time, "s", f"train.compute_time.{self.acc.key}")
        add("inputs", "au_goal_pct", "AU goal", w.train.au_goal * 100, "%", "train.au_goal")
        if self.inp.mfu is not None:
            self.out.notes.append("--mfu is not used for a workload: its compute time per batch "
                                  "is measured time; the AU goal is the utilization")

    def memory(self) -> None:
        add, p = self.out.add, self.params
        parts = memory_parts(self.inp.precision, self.inp.optimizer)
        for key, label, nbytes in parts:
            add("memory", f"{key}_bytes_per_parameter", label, nbytes, "B/param")
        per_param = sum(b for _, _, b in parts)
        add("memory", "state_bytes_per_parameter", "training state per parameter", per_param,
            "B/param", " + ".join(str(b) for _, _, b in parts))
        if not p:
            add("memory", "state_gib", "training state per replica", None, "GiB",
                "needs --parameters (the workload has no model.parameters)")
            return
        state = p * per_param
        add("memory", "state_gib", "training state per replica", state / GiB, "GiB",
            f"{fmt_count(p)} x {per_param} B / 2^30")
        self.shards = shards_for(state, self.acc.memory_bytes)
        add("memory", "fits_one", f"fits one {self.acc.key}", self.shards == 1, "",
            f"{fmt(state / GiB)} GiB vs {fmt(self.acc.memory_gib)} GiB")
        add("memory", "shards", "accelerators to hold one replica", self.shards, "accelerators",
            f"ceil({fmt(state / GiB)} / {fmt(self.acc.memory_gib)} GiB), activations not counted")
        self._memory_verdict(state)
        self._checkpoint_agreement(per_param, parts)

    def _memory_verdict(self, state: float) -> None:
        acc, shards = self.acc.key, self.shards
        if shards == 1:
            self.out.verdict.append(f"one replica's training state ({fmt(state / GiB)} GiB) fits "
                                    f"one {acc} ({fmt(self.acc.memory_gib)} GiB) before "
                                    "activations")
        else:
            self.out.verdict.append(f"one replica's training state ({fmt(state / GiB)} GiB) must "
                                    f"be sharded over at least {shards} {acc} "
                                    f"({fmt(self.acc.memory_gib)} GiB each) before activations")
        if self.inp.gpus is not None and self.inp.gpus < shards:
            self.out.verdict.append(f"{self.inp.gpus} {acc} cannot hold one replica: "
                                    f"at least {shards} are needed")

    def _checkpoint_agreement(self, per_param: int, parts: list[tuple[str, str, int]]) -> None:
        # a checkpoint holds the training state without the gradients
        saved = per_param - dict((k, b) for k, _, b in parts)["gradients"]
        if saved != self.w.model.bytes_per_parameter:
            self.out.notes.append(
                f"{self.inp.precision} + {self.inp.optimizer} state without gradients is {saved} "
                f"B/param; checkpoints use the workload's {fmt(self.w.model.bytes_per_parameter)}"
                " B/param (model.bytes_per_parameter)")

    def compute(self) -> None:
        if self.is_model:
            self._transformer_compute()
        else:
            self._workload_compute()
        self._accelerators()

    def _transformer_compute(self) -> None:
        add, p, acc, tokens = self.out.add, self.params, self.acc, self.inp.tokens
        effective = acc.peak_flops * self.mfu
        add("compute", "effective_tflops", "sustained per accelerator", effective / 1e12,
            "TFLOP/s", f"{fmt(acc.bf16_tflops)} x MFU {fmt(self.mfu)}")
        add("compute", "tokens_per_s", "tokens per accelerator", tokens_per_second(
            p, acc.peak_flops, self.mfu), "tokens/s",
            f"{fmt(effective / 1e12)} TFLOP/s / (6 x {fmt_count(p)})")
        if tokens is None:
            add("compute", "flops_tflop", "training work", None, "TFLOP", "needs --tokens")
            return
        flops = training_flops(p, tokens)
        add("compute", "flops_tflop", "training work", flops / 1e12, "TFLOP",
            f"6 x {fmt_count(p)} x {fmt_count(tokens)} tokens")
        self.accel_seconds = transformer_accelerator_seconds(flops, acc.peak_flops, self.mfu)
        add("compute", "accelerator_hours", "accelerator time", self.accel_seconds / 3600,
            "accelerator-hours", f"{fmt(flops / 1e12)} TFLOP / {fmt(effective / 1e12)} TFLOP/s")

    def _workload_compute(self) -> None:
        add, w = self.out.add, self.w
        n_steps = steps(self.epochs, self.samples, w.train.batch_size)
        add("compute", "steps", "batches (all accelerators)", n_steps, "batches",
            f"{self.epochs} epochs x {self.samples:,} samples / {w.train.batch_size}")
        busy = n_steps * w.compute_time
        add("compute", "compute_hours", "accelerator compute time", busy / 3600,
            "accelerator-hours", f"{fmt(n_steps)} x {fmt(w.compute_time)} s / 3600")
        self.accel_seconds = workload_accelerator_seconds(n_steps, w.compute_time,
                                                          w.train.au_goal)
        add("compute", "accelerator_hours", "accelerator time at the AU goal",
            self.accel_seconds / 3600, "accelerator-hours",
            f"{fmt(busy / 3600)} h / AU {fmt(w.train.au_goal)}")

    def _accelerators(self) -> None:
        add, inp, acc = self.out.add, self.inp, self.acc.key
        needed = None
        if self.accel_seconds is not None and inp.days is not None:
            needed = accelerators_for(self.accel_seconds, inp.days * SECONDS_PER_DAY)
            add("compute", "accelerators_needed", f"{acc} for a {fmt(inp.days)}-day budget",
                needed, "accelerators",
                f"ceil({fmt(self.accel_seconds / 3600)} h / ({fmt(inp.days)} x 24 h))")
            if inp.gpus is None:
                self.out.verdict.append(f"{needed} {acc} finish the work in {fmt(inp.days)} days"
                                        f" ({fmt(self.accel_seconds / 3600)} accelerator-hours)")
        if self.accel_seconds is not None and inp.gpus is not None:
            hours = self.accel_seconds / inp.gpus / 3600
            add("compute", "hours_with_gpus", f"time on {inp.gpus} {acc}", hours, "hours",
                f"{fmt(self.accel_seconds / 3600)} h / {inp.gpus}")
            if inp.days is not None:
                within = "within" if hours <= inp.days * 24 else "over"
                self.out.verdict.append(f"{inp.gpus} {acc} finish in {fmt(hours / 24)} days: "
                                        f"{within} the {fmt(inp.days)}-day budget "
                                        f"({needed} needed)")
        self.n = self._accelerators_served(needed)
        if self.n is not None:
            add("compute", "accelerators", "accelerators the storage serves", self.n,
                "accelerators", "--gpus" if inp.gpus else "to finish in time (and no fewer "
                "than one replica's shards)")
        if self.accel_seconds is not None and inp.days is None and inp.gpus is None:
            self.out.notes.append("give --days or --gpus to size the cluster and its storage")

    def _accelerators_served(self, needed: int | None) -> int | None:
        if self.inp.gpus is not None:
            return self.inp.gpus
        if needed is None:
            return None
        if self.shards and self.shards > needed:
            self.out.notes.append(f"memory, not time, sets the count: {self.shards} {self.acc.key}"
                                  f" hold one replica, {needed} would finish in time")
            return self.shards
        return needed

    def storage(self) -> None:
        self._capacity()
        self._read_rate()
        self._checkpoint_rate()
        self._load_rate()

    def _dataset_bytes(self) -> tuple[float | None, str]:
        inp = self.inp
        if inp.dataset_size is not None:
            return inp.dataset_size, "--dataset-size"
        if not self.is_model:
            return self.w.dataset_bytes, (f"{self.w.num_samples:,} samples x "
                                          f"{self.w.dataset.sample_size:,} B")
        if inp.tokens is not None:
            return inp.tokens * inp.bytes_per_token, (f"{fmt_count(inp.tokens)} tokens x "
                                                      f"{fmt(inp.bytes_per_token)} B")
        return None, "needs --tokens or --dataset-size"

    def _capacity(self) -> None:
        add, inp = self.out.add, self.inp
        dataset, how = self._dataset_bytes()
        add("storage", "dataset_gib", "dataset", _gib(dataset), "GiB", how)
        prep = dataset * inp.prep_copies if dataset is not None else None
        add("storage", "prep_output_gib", "prep output", _gib(prep), "GiB",
            f"dataset x {fmt(inp.prep_copies)}")
        if self.params:
            self.checkpoint_bytes = self.params * self.w.model.bytes_per_parameter
        add("storage", "checkpoint_gib", "one checkpoint", _gib(self.checkpoint_bytes), "GiB",
            f"{fmt_count(self.params)} x {fmt(self.w.model.bytes_per_parameter)} B"
            if self.params else "needs --parameters")
        kept = self.checkpoint_bytes * inp.retention if self.checkpoint_bytes else None
        add("storage", "checkpoints_gib", "checkpoints kept", _gib(kept), "GiB",
            f"one checkpoint x {inp.retention}")
        total = sum(x for x in (dataset, prep, kept) if x)
        add("storage", "capacity_gib", "capacity", total / GiB, "GiB",
            "dataset + prep output + checkpoints kept")

    def _read_rate(self) -> None:
        if self.is_model:
            self.demand = self.out.value("tokens_per_s") * self.inp.bytes_per_token / MiB
            how = f"{fmt(self.out.value('tokens_per_s'))} tokens/s x " \
                  f"{fmt(self.inp.bytes_per_token)} B"
        else:
            w = self.w
            self.demand = w.demand_mib_s()
            how = f"{w.train.batch_size} x {w.dataset.sample_size:,} B / {fmt(w.compute_time)} s"
        self.out.add("storage", "demand_mib_s", "read demand per accelerator", self.demand,
                     "MiB/s", how)
        total = self.n * self.demand if self.n else None
        self.out.add("storage", "read_mib_s", "read bandwidth", total, "MiB/s",
                     f"{self.n} x {fmt(self.demand)} MiB/s" if self.n else "needs --gpus or --days")
        if not self.is_model:
            floor = total * self.w.train.au_goal if total else None
            self.out.add("storage", "read_floor_mib_s", "least read bandwidth at the AU goal",
                         floor, "MiB/s", f"read bandwidth x AU {fmt(self.w.train.au_goal)}"
                         " (below it the goal fails)")
            self._batch_note()

    def _batch_note(self) -> None:
        batch, n = self.w.train.batch_size, self.n
        if n and n * batch > self.samples:
            self.out.notes.append(
                f"{n} x {batch} samples per step is more than the dataset's {self.samples:,} "
                f"samples: at most {self.samples // batch} accelerators get a batch each step "
                "(--dataset-size sizes a larger dataset)")

    def _checkpoint_rate(self) -> None:
        inp, ckpt = self.inp, self.checkpoint_bytes
        rate = checkpoint_write_mib_s(ckpt, inp.checkpoint_interval, inp.stall_budget) \
            if ckpt else None
        stall = inp.checkpoint_interval * inp.stall_budget
        self.out.add("storage", "checkpoint_stall_s", "longest stall per checkpoint", stall, "s",
                     f"{fmt(inp.checkpoint_interval)} s x {fmt(inp.stall_budget)}")
        self.out.add("storage", "checkpoint_write_mib_s", "checkpoint write bandwidth", rate,
                     "MiB/s", f"{fmt(_gib(ckpt))} GiB x 1024 / {fmt(stall)} s" if ckpt
                     else "needs --parameters")

    def _load_rate(self) -> None:
        inp, add = self.inp, self.out.add
        if not self.params:
            add("storage", "load_mib_s", "model load bandwidth", None, "MiB/s",
                "needs --parameters")
            return
        per = weight_bytes_per_parameter(inp.precision)
        weights = self.params * per
        add("storage", "weights_gib", "weights one replica loads", weights / GiB, "GiB",
            f"{fmt_count(self.params)} x {per} B ({inp.precision})")
        add("storage", "load_mib_s", "model load bandwidth",
            load_mib_s(inp.replicas, weights, inp.load_time), "MiB/s",
            f"{inp.replicas} x {fmt(weights / GiB)} GiB x 1024 / {fmt(inp.load_time)} s")

    def measured(self) -> None:
        if self.train is not None:
            self._measured_train(self.train)
        if self.checkpoint is not None:
            self._measured_checkpoint(self.checkpoint)

    def _measured_train(self, m: MeasuredTrain) -> None:
        add, acc, demand = self.out.add, self.acc.key, self.demand
        add("measured", "train_source", f"train {m.kind}", "--from", "", m.source)
        add("measured", "train_accelerator", "measured with", m.accelerator, "",
            f"demand {fmt(m.demand_mib_s)} MiB/s per {m.accelerator}")
        add("measured", "train_clients", "client counts measured",
            ", ".join(str(p.clients) for p in m.points), "clients")
        passing = m.largest_passing
        add("measured", "largest_passing", "largest count with every client at the AU goal",
            passing, "clients", f"AU goal {fmt(m.au_goal * 100)} %")
        peak = m.peak
        add("measured", "peak_mib_s", "peak aggregate read (first done)", peak.first_done_mib_s,
            "MiB/s", f"at {peak.clients} clients")
        scale = m.demand_mib_s / demand
        fed_measured = math.floor(passing * scale + 1e-9) if passing else 0
        if m.accelerator != acc:
            self.out.notes.append(
                f"measured with {m.accelerator} clients ({fmt(m.demand_mib_s)} MiB/s each); "
                f"one {acc} needs {fmt(demand)} MiB/s, so counts are scaled by {fmt(scale)}")
        add("measured", "fed_measured", f"{acc} fed at the AU goal, as measured", fed_measured,
            "accelerators", f"{passing or 0} x {fmt(m.demand_mib_s)} / {fmt(demand)} MiB/s")
        fed_peak = math.floor(peak.first_done_mib_s / demand + 1e-9)
        add("measured", "fed_estimate", f"{acc} the peak feeds at full demand", fed_peak,
            "accelerators", f"{fmt(peak.first_done_mib_s)} / {fmt(demand)} MiB/s")
        # with reads fully overlapped, AU = rate / demand, so the goal holds down to goal x demand
        goal = self.w.train.au_goal if not self.is_model else m.au_goal
        add("measured", "fed_floor", f"{acc} the peak feeds at the AU-goal floor",
            math.floor(peak.first_done_mib_s / (demand * goal) + 1e-9), "accelerators",
            f"{fmt(peak.first_done_mib_s)} / ({fmt(demand)} MiB/s x AU {fmt(goal)}), "
            "if prefetch hides all I/O")
        self._train_verdict(m, fed_measured, fed_peak)
        for warning in m.warnings:
            # a number that may not be the storage's must not pass silently into a verdict
            self.out.notes.append(f"the train result warns: {warning}")

    def _train_verdict(self, m: MeasuredTrain, fed_measured: int, fed_peak: int) -> None:
        acc, peak, most = self.acc.key, m.peak.first_done_mib_s, max(p.clients for p in m.points)
        passed = m.largest_passing or 0
        scaled = f", as much data as {fed_measured} {acc}" if m.accelerator != acc else ""
        if not passed:
            line = (f"measured: no count up to {most} {m.accelerator} kept every client at the AU"
                    f" goal; the peak {fmt(peak)} MiB/s feeds {fed_peak} {acc} at "
                    f"{fmt(self.demand)} MiB/s each")
        elif not m.saturated:
            # the storage never ran out, so the peak is a floor of its capacity, not the capacity
            line = (f"measured: every client met the AU goal at every count up to {most} "
                    f"{m.accelerator}{scaled}; the storage was not saturated, so it feeds at "
                    f"least {max(fed_measured, fed_peak)} {acc} (sweep further for its limit)")
        else:
            line = (f"measured: every client met the AU goal up to {passed} {m.accelerator} "
                    f"(of {most} measured){scaled}; the peak {fmt(peak)} MiB/s feeds {fed_peak} "
                    f"{acc} at {fmt(self.demand)} MiB/s each")
        self.out.verdict.append(line)
        if self.n:
            self._fleet_verdict(m, fed_measured)

    def _fleet_verdict(self, m: MeasuredTrain, fed_measured: int) -> None:
        """Can the measured storage feed the accelerators being sized?"""
        acc, need, peak = self.acc.key, self.n * self.demand, m.peak.first_done_mib_s
        if peak >= need:
            enough = ("enough, as measured" if self.n <= fed_measured
                      else "enough by the peak, beyond the counts measured at the AU goal")
        elif m.saturated:
            enough = f"short by {fmt(need / peak)}x"
        else:
            enough = "not shown: the sweep did not load the storage that far (sweep further)"
        self.out.verdict.append(f"{self.n} {acc} need {fmt(need)} MiB/s; the storage "
                                f"delivered at most {fmt(peak)} MiB/s: {enough}")

    def _measured_checkpoint(self, m: MeasuredCheckpoint) -> None:
        add, inp = self.out.add, self.inp
        add("measured", "checkpoint_source", "checkpoint result", "--from", "", m.source)
        self.out.notes.extend(f"the checkpoint result warns: {w}" for w in m.warnings)
        if m.write_mib_s is None:
            self.out.notes.append(m.note)
            return
        add("measured", "checkpoint_measured_mib_s", "aggregate checkpoint write (last done)",
            m.write_mib_s, "MiB/s", f"at {m.clients} clients")
        ranks = self.w.model.ranks
        if ranks and m.clients != ranks:
            self.out.notes.append(f"the checkpoint was measured with {m.clients} writers; "
                                  f"{self.w.name} is checkpointed by {ranks} ranks "
                                  "(model.ranks), which may write faster or slower")
        if not self.checkpoint_bytes:
            self.out.notes.append("a checkpoint result was given but no model parameters: "
                                  "give --parameters to time a checkpoint")
            return
        seconds = self.checkpoint_bytes / MiB / m.write_mib_s
        add("measured", "checkpoint_time_s", "checkpoint time on this storage", seconds, "s",
            f"{fmt(self.checkpoint_bytes / GiB)} GiB x 1024 / {fmt(m.write_mib_s)} MiB/s")
        share = seconds / inp.checkpoint_interval
        add("measured", "checkpoint_stall_pct", "stall share of the interval", share * 100, "%",
            f"{fmt(seconds)} s / {fmt(inp.checkpoint_interval)} s")
        within = "within" if share <= inp.stall_budget else "over"
        self.out.verdict.append(
            f"a {fmt(self.checkpoint_bytes / GiB)} GiB checkpoint takes {fmt(seconds)} s at the "
            f"measured {fmt(m.write_mib_s)} MiB/s: {fmt(share * 100)} % of a "
            f"{fmt(inp.checkpoint_interval / 3600)} h interval, {within} the "
            f"{fmt(inp.stall_budget * 100)} % budget")


def _gib(nbytes: float | None) -> float | None:
    return nbytes / GiB if nbytes is not None else None
