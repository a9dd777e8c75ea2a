"""GPU and storage sizing: the arithmetic behind `aiio size`.

Nothing here measures or prints. `size()` works through five sections, each a pure function
that returns its rows (label, value, unit, formula with the numbers filled in), verdict
sentences and notes; the CLI renders the resulting `Sizing` as tables or JSON.
docs/SIZING.md explains every formula and default.

  formulas      the arithmetic and its constants
  accelerators  the accelerator table
  measured      what train and checkpoint results say (read through the result model)
  inputs        what is asked, and its checks
  basis         what every section starts from
  sections      inputs, memory, compute;  storage: capacity and bandwidth;
  against       the sized demand against the measured results
  rows, format  the answer's rows, and how numbers print
"""

from __future__ import annotations

from aiio.sizing.accelerators import (
    Accelerator,
    accelerators_path,
    find_accelerator,
    load_accelerators,
)
from aiio.sizing.against import measured_part
from aiio.sizing.basis import basis
from aiio.sizing.format import fmt, fmt_count
from aiio.sizing.formulas import (
    DEFAULT_BYTES_PER_TOKEN,
    DEFAULT_CHECKPOINT_INTERVAL,
    DEFAULT_LOAD_TIME,
    DEFAULT_MFU,
    DEFAULT_REPLICAS,
    DEFAULT_RETENTION,
    DEFAULT_STALL_BUDGET,
    OPTIMIZERS,
    PRECISIONS,
    accelerators_for,
    checkpoint_write_mib_s,
    demand_mib_s,
    load_mib_s,
    memory_parts,
    shards_for,
    steps,
    tokens_per_second,
    training_flops,
    transformer_accelerator_seconds,
    weight_bytes_per_parameter,
    workload_accelerator_seconds,
)
from aiio.sizing.inputs import SizingInputs
from aiio.sizing.measured import MeasuredCheckpoint, MeasuredTrain, TrainPoint
from aiio.sizing.rows import SIZING_SCHEMA, Row, Sizing
from aiio.sizing.sections import compute_part, inputs_part, memory_part
from aiio.sizing.storage import storage_part

__all__ = [
    "DEFAULT_BYTES_PER_TOKEN", "DEFAULT_CHECKPOINT_INTERVAL", "DEFAULT_LOAD_TIME", "DEFAULT_MFU",
    "DEFAULT_REPLICAS", "DEFAULT_RETENTION", "DEFAULT_STALL_BUDGET", "OPTIMIZERS", "PRECISIONS",
    "SIZING_SCHEMA", "Accelerator", "MeasuredCheckpoint", "MeasuredTrain", "Row", "Sizing",
    "SizingInputs", "TrainPoint", "accelerators_for", "accelerators_path",
    "checkpoint_write_mib_s", "demand_mib_s", "find_accelerator", "fmt", "fmt_count",
    "load_accelerators", "load_mib_s", "memory_parts", "shards_for", "size", "steps",
    "tokens_per_second", "training_flops", "transformer_accelerator_seconds",
    "weight_bytes_per_parameter", "workload_accelerator_seconds",
]


def size(inputs: SizingInputs) -> Sizing:
    """Size compute and storage for a model or workload; compare with results if given."""
    inputs.check()
    b = basis(inputs)
    memory, shards = memory_part(b)
    compute, found = compute_part(b, shards)
    storage, needs = storage_part(b, found)
    return Sizing.of(b.title, [inputs_part(b), memory, compute, storage,
                               measured_part(b, found, needs)])
