"""What `aiio size` is asked: every input, and the checks that refuse a bad one."""

from __future__ import annotations

from dataclasses import dataclass

from aiio.errors import ConfigError
from aiio.sizing.formulas import (
    DEFAULT_BYTES_PER_TOKEN,
    DEFAULT_CHECKPOINT_INTERVAL,
    DEFAULT_LOAD_TIME,
    DEFAULT_REPLICAS,
    DEFAULT_RETENTION,
    DEFAULT_STALL_BUDGET,
    memory_parts,
)


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
