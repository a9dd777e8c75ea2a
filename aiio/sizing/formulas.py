"""The sizing formulas: pure arithmetic on numbers, each with the constants it uses."""

from __future__ import annotations

import math

from aiio.errors import ConfigError
from aiio.units import MiB

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
