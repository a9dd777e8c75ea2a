"""What every sizing section starts from: the workload or model, the accelerator, the inputs
with their defaults filled in, and the measured results given with --from."""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from pathlib import Path

from aiio.errors import AiioError, ConfigError
from aiio.results import result
from aiio.results.result import Result
from aiio.sizing.accelerators import Accelerator, find_accelerator, load_accelerators
from aiio.sizing.formulas import DEFAULT_MFU
from aiio.sizing.inputs import SizingInputs
from aiio.sizing.measured import (
    MeasuredCheckpoint,
    MeasuredTrain,
    measured_checkpoint,
    measured_train,
)
from aiio.workload import Workload, load_workload


@dataclass(frozen=True)
class Basis:
    """The fixed inputs of every section; None means not given."""

    inp: SizingInputs
    w: Workload
    acc: Accelerator
    is_model: bool
    params: float | None
    mfu: float
    epochs: int
    samples: int
    train: MeasuredTrain | None
    checkpoint: MeasuredCheckpoint | None

    @property
    def title(self) -> str:
        what = f"model {self.w.name}" if self.is_model else f"workload {self.w.name}"
        return f"aiio size: {what} on {self.acc.name}"


def basis(inp: SizingInputs) -> Basis:
    """Read the workload (or model preset), the accelerator table and the --from results."""
    is_model = inp.model is not None
    w = _workload(inp, is_model)
    acc = find_accelerator(inp.accelerator or w.train.accelerator, load_accelerators())
    if not is_model:
        w = _with_accelerator(w, acc.key)
    train, checkpoint = _results(inp, w)
    return Basis(inp=inp, w=w, acc=acc, is_model=is_model,
                 params=inp.parameters or w.model.parameters or None,
                 mfu=inp.mfu if inp.mfu is not None else DEFAULT_MFU,
                 epochs=inp.epochs or w.train.epochs, samples=_samples(inp, w),
                 train=train, checkpoint=checkpoint)


def _workload(inp: SizingInputs, is_model: bool) -> Workload:
    name = inp.model or inp.workload
    w = load_workload(name)
    if is_model and not (inp.parameters or w.model.parameters):
        raise ConfigError(f"{name} has no model.parameters; give --parameters (e.g. 70B) "
                          f"or size it with --workload {name}")
    if not is_model and not _has_section(w.source, "train"):
        raise ConfigError(f"workload {name} has no [train] section; size a model preset "
                          f"with --model {name}")
    return w


def _has_section(source: str, section: str) -> bool:
    """Whether the workload file itself has [section] (defaults fill it in otherwise)."""
    with Path(source).open("rb") as fh:
        return section in tomllib.load(fh)


def _samples(inp: SizingInputs, w: Workload) -> int:
    """Samples in the dataset: the workload's, or as many as --dataset-size holds."""
    if inp.dataset_size is None:
        return w.num_samples
    return max(1, int(inp.dataset_size // w.dataset.sample_size))


def _with_accelerator(w: Workload, key: str) -> Workload:
    if key not in w.train.compute_time:
        known = ", ".join(sorted(w.train.compute_time))
        raise ConfigError(f"workload {w.name} has a compute time per batch only for {known};"
                          " pick one with --accelerator")
    return dataclasses.replace(w, train=dataclasses.replace(w.train, accelerator=key))


def _results(inp: SizingInputs,
             w: Workload) -> tuple[MeasuredTrain | None, MeasuredCheckpoint | None]:
    train = checkpoint = None
    for path in inp.results:
        res = _load(path)
        where, phase = str(res.path), res.phase
        if phase == "train":
            if train is not None:
                raise ConfigError("--from: give one train result or sweep, not two")
            train = measured_train(res, where)
            _check_same_workload(train, w)
        elif phase == "checkpoint":
            if checkpoint is not None:
                raise ConfigError("--from: give one checkpoint result or sweep, not two")
            checkpoint = measured_checkpoint(res, where)
        else:
            raise ConfigError(f"--from {where}: a result of phase {phase!r}; sizing reads "
                              "train and checkpoint results")
    return train, checkpoint


def _load(path: str) -> Result:
    """The run or sweep result at --from PATH, either schema; other kinds are refused."""
    try:
        res = result.load(path)
    except AiioError as exc:
        raise ConfigError(f"--from {path}: {exc}") from None
    if res.kind not in ("run", "sweep"):
        raise ConfigError(f"--from {res.path}: kind {res.kind!r} is neither run nor sweep")
    return res


def _check_same_workload(train: MeasuredTrain, w: Workload) -> None:
    # a read rate measured with one workload's access pattern says little about another's
    if train.workload != w.name:
        raise ConfigError(f"--from {train.source} measured workload {train.workload!r}; "
                          f"size it with --workload {train.workload} or give a "
                          f"{w.name} result")
