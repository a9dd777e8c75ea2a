"""Acceptance specs: TOML -> frozen, validated dataclasses (the spec, its checks, thresholds).

A spec names a target and a list of checks; each check is a phase, a workload, a client count
(or a rising list of counts, run as a sweep) and thresholds. Keys are declared with the same
`key(...)` table as workloads, so unknown keys and impossible values fail the same way: one
ConfigError naming the file, the check and the key.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiio.cache_methods import REQUESTS
from aiio.errors import ConfigError
from aiio.options import RunOptions
from aiio.results.history import DEFAULT_BASELINE_RUNS, DEFAULT_FRACTION

# the same key table and checks as workloads, so specs and workloads fail the same way
from aiio.workload import Workload, _check, _coerce, key, load_workload

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


# --- the spec ------------------------------------------------------------------------------

@dataclass(frozen=True)
class SpecInfo:
    name: str = key("str", "", "short name of the spec, used in results and JUnit")
    description: str = key("str", "", "one line saying what the spec accepts")
    target: str = key("str", "", "directory under test; --target overrides it")
    regression_fraction: float = key("float", DEFAULT_FRACTION, "flag a figure this fraction "
                                     "worse than its baseline", gt=0, max=1)
    baseline_runs: int = key("int", DEFAULT_BASELINE_RUNS, "baseline: median of this many last "
                             "passing runs", min=1, max=1000)


@dataclass(frozen=True)
class Require:
    """Thresholds; each compares one figure of the result (THRESHOLDS) and is off when unset."""

    min_au: float | None = key("float", None, "every client's AU at least this", gt=0, max=1)
    min_au_mean: float | None = key("float", None, "the mean AU over clients at least this "
                                    "(MLPerf's rule)", gt=0, max=1)
    min_aggregate_mib_s: float | None = key("float", None, "aggregate MiB/s (first done; a "
                                            "checkpoint's: until every shard is durable)", gt=0)
    min_client_mib_s: float | None = key("float", None, "the slowest client's MiB/s", gt=0)
    max_cv: float | None = key("float", None, "per-client MiB/s coefficient of variation", gt=0)
    min_scaling_efficiency: float | None = key(
        "float", None, "lowest E(N) = agg(N) / (N/n0 x agg(n0)) of a client list", gt=0, max=1)
    max_checkpoint_s: float | None = key("duration", None, "checkpoint time, slowest client",
                                         gt=0)
    max_restore_s: float | None = key("duration", None, "checkpoint restore time, slowest "
                                      "client", gt=0)
    max_load_s: float | None = key("duration", None, "model load time, last replica", gt=0)
    max_p99_ms: float | None = key("float", None, "p99 latency of the main operation, ms", gt=0)
    max_query_p99_ms: float | None = key("float", None, "a vector search's query p99 latency, "
                                         "pooled over clients, ms", gt=0)
    min_queries_per_s: float | None = key("float", None, "a vector search's queries/s done in "
                                          "the duration", gt=0)
    min_tokens_per_s: float | None = key("float", None, "a KV cache's tokens/s served in the "
                                         "duration", gt=0)
    max_storage_p95_ms: float | None = key("float", None, "a KV cache's request storage time "
                                           "p95, pooled over clients, ms", gt=0)
    max_request_p95_ms: float | None = key("float", None, "a KV cache's request latency p95 "
                                           "(queue wait + storage time), pooled, ms", gt=0)
    min_hero_fraction: float | None = key("float", None, "aggregate as a fraction of the fio "
                                          "hero number", gt=0, max=1)

    def items(self) -> list[tuple[str, float]]:
        """(threshold, value) for every threshold that is set, in declaration order."""
        return [(f.name, getattr(self, f.name)) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None]


# threshold -> (figure it judges, comparison)
THRESHOLDS = {
    "min_au": ("au_min", ">="),
    "min_au_mean": ("au_mean", ">="),
    "min_aggregate_mib_s": ("aggregate_mib_s", ">="),
    "min_client_mib_s": ("client_mib_s_min", ">="),
    "max_cv": ("cv", "<="),
    "min_scaling_efficiency": ("scaling_efficiency_min", ">="),
    "max_checkpoint_s": ("checkpoint_s", "<="),
    "max_restore_s": ("restore_s", "<="),
    "max_load_s": ("load_s", "<="),
    "max_p99_ms": ("p99_ms", "<="),
    "max_query_p99_ms": ("query_p99_ms", "<="),
    "min_queries_per_s": ("queries_per_s", ">="),
    "min_tokens_per_s": ("tokens_per_s", ">="),
    "max_storage_p95_ms": ("storage_p95_ms", "<="),
    "max_request_p95_ms": ("request_p95_ms", "<="),
    "min_hero_fraction": ("hero_fraction", ">="),
}


@dataclass(frozen=True)
class CheckKeys:
    """The scalar keys of one [[check]] table (clients, set, options, require are tables)."""

    name: str = key("str", "", "unique name; the history follows a check by it")
    description: str = key("str", "", "one line")
    phase: str = key("str", "train", "lifecycle phase")
    workload: str = key("str", "demo", "shipped workload name, or a TOML path (relative to the "
                        "spec file)")
    accelerator: str = key("str", "", "accelerator type (train.accelerator)")
    duration: float = key("duration", 0.0, "run each point this long (the phase's time limit: "
                          "train.duration, prep.duration for randrw)", min=0)
    epochs: int = key("int", 0, "passes over the dataset (train.epochs; 0: the workload's)",
                      min=0)
    cache: str = key("str", "auto", "how the page cache is defeated", choices=REQUESTS)
    latency_op: str = key("str", "", "operation max_p99_ms judges (default: the phase's main)")


TABLE_KEYS = ("clients", "set", "options", "require")


@dataclass(frozen=True)
class Check:
    """One validated check: everything needed to run it and judge it."""

    name: str
    phase: str
    workload: Workload            # resolved with the check's overrides; run.clients = largest
    clients: tuple[int, ...]
    require: Require
    cache: str = "auto"
    latency_op: str = ""
    options: RunOptions = RunOptions()
    description: str = ""
    engine: str | None = None  # the storage engine it runs on (--engine); None: the target's

    @property
    def sweep(self) -> bool:
        return len(self.clients) > 1

    def clients_value(self) -> int | list[int]:
        return list(self.clients) if self.sweep else self.clients[0]


@dataclass(frozen=True)
class Spec:
    info: SpecInfo
    checks: tuple[Check, ...]
    path: str

    @property
    def name(self) -> str:
        return self.info.name

    def select(self, names: tuple[str, ...]) -> tuple[Check, ...]:
        """The named checks, in spec order; an unknown name is a config error."""
        if not names:
            return self.checks
        known = [c.name for c in self.checks]
        for n in names:
            if n not in known:
                raise ConfigError(f"{self.path}: no check named {n!r}; checks: "
                                  f"{', '.join(known)}")
        return tuple(c for c in self.checks if c.name in names)


def _values(cls: type, table: dict[str, Any], where: str,
            tables: tuple[str, ...] = ()) -> dict[str, Any]:
    """Coerce and check a table's keys against a dataclass of key() fields; unknown keys are
    errors naming the file, the table and the key."""
    known = {f.name: f for f in dataclasses.fields(cls)}
    out = {}
    for name, raw in table.items():
        if name in tables:
            continue
        if name not in known:
            names = ", ".join([*known, *tables])
            raise ConfigError(f"{where}: unknown key {name!r}; known keys: {names}")
        meta = known[name].metadata
        value = _coerce(meta["kind"], raw, f"{where}.{name}")
        _check(meta, value, f"{where}.{name}")
        out[name] = value
    return out


def _clients(raw: Any, where: str) -> tuple[int, ...]:
    counts = raw if isinstance(raw, list) else [raw]
    if not counts or not all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
        raise ConfigError(f"{where}.clients = {raw!r}: give a count (8) or a list ([1, 2, 4])")
    if min(counts) < 1:
        raise ConfigError(f"{where}.clients = {raw!r}: every count must be at least 1")
    if list(counts) != sorted(set(counts)):
        raise ConfigError(f"{where}.clients = {raw!r}: a list must rise, without repeats")
    return tuple(counts)


def _overrides(keys: dict[str, Any], sets: Any, clients: tuple[int, ...],
               where: str) -> list[tuple[str, str, Any]]:
    """The check's keys and its [check.set] table as workload overrides."""
    out: list[tuple[str, str, Any]] = [("run", "clients", max(clients))]
    if keys.get("accelerator"):
        out.append(("train", "accelerator", keys["accelerator"]))
    if keys.get("epochs"):
        out.append(("train", "epochs", keys["epochs"]))
    if not isinstance(sets, dict):
        raise ConfigError(f"{where}.set must be a table, e.g. set.dataset.num_files = 64")
    for section, table in sets.items():
        if not isinstance(table, dict):
            raise ConfigError(f"{where}.set.{section} must be a table of keys: "
                              f"set.{section}.KEY = VALUE")
        out += [(section, k, v) for k, v in table.items()]
    return out


def _workload_ref(ref: str, spec_dir: Path) -> str:
    """A relative workload path is read from the spec's folder, so a spec travels with it."""
    if (ref.endswith(".toml") or os.sep in ref) and not os.path.isabs(ref):
        return str(spec_dir / ref)
    return ref


def _require(table: Any, clients: tuple[int, ...], phase: str, where: str) -> Require:
    if not isinstance(table, dict) or not table:
        raise ConfigError(f"{where}: no thresholds; add a [check.require] table, e.g. "
                          "min_au = 0.9")
    req = Require(**_values(Require, table, f"{where}.require"))
    if req.min_scaling_efficiency is not None and len(clients) < 2:
        raise ConfigError(f"{where}.require.min_scaling_efficiency needs a client list, "
                          "e.g. clients = [1, 2, 4, 8]")
    if req.min_au is not None and not _measures_au(phase):
        raise ConfigError(f"{where}.require.min_au: phase {phase} has no accelerator "
                          "utilization; use it with phase = \"train\"")
    from aiio.results.figures import FIGURES

    for threshold, _ in req.items():
        figure = THRESHOLDS[threshold][0]
        owners = _owners(figure)
        if owners and phase not in owners:
            raise ConfigError(f"{where}.require.{threshold}: phase {phase} records no "
                              f"{FIGURES[figure].label}; use it with phase = \"{owners[0]}\"")
    return req


def _measures_au(name: str) -> bool:
    """The phase, or one of its stages, emulates accelerators and so measures AU."""
    from aiio.phases import get_phase, with_stages
    return any(p.accelerators for p in with_stages(get_phase(name)))


def _owners(figure: str) -> list[str]:
    """The phases whose results alone hold `figure` (`Phase.own_figures`); [] when any
    phase's may."""
    from aiio.phases import REGISTRY, get_phase
    return [name for name in REGISTRY if figure in get_phase(name).own_figures]


def build_check(table: dict[str, Any], where: str, spec_dir: Path) -> Check:
    """Validate one [[check]] table into a Check (the workload resolved and checked too)."""
    from aiio.phases import get_phase
    from aiio.sweep.run import time_limit_key, with_value

    keys = _values(CheckKeys, table, where, TABLE_KEYS)
    name = keys.get("name", "")
    if not NAME_RE.match(name):
        raise ConfigError(f"{where}.name = {name!r}: give each check a name of letters, digits, "
                          "'.', '_' or '-'")
    where = f"{where} {name!r}"
    phase = keys.get("phase", "train")
    clients = _clients(table.get("clients", 1), where)
    options = table.get("options", {})
    if not isinstance(options, dict):
        raise ConfigError(f"{where}.options must be a table")
    options = RunOptions.from_table(options, f"{where}.options")
    try:
        get_phase(phase)
        workload = load_workload(_workload_ref(keys.get("workload", "demo"), spec_dir),
                                 _overrides(keys, table.get("set", {}), clients, where))
        if keys.get("duration"):  # routed as `aiio run --duration`: prep.duration for randrw
            key = time_limit_key(phase, workload, "duration")
            workload = with_value(workload, *key, keys["duration"])
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return Check(name=name, phase=phase, workload=workload, clients=clients,
                 require=_require(table.get("require"), clients, phase, where),
                 cache=keys.get("cache", "auto"), latency_op=keys.get("latency_op", ""),
                 options=options, description=keys.get("description", ""))


def load_spec(path: str | os.PathLike) -> Spec:
    """Read and validate an acceptance spec (a name or a path); any problem is one ConfigError
    naming file and key."""
    from aiio.workload import resolve_spec

    p = resolve_spec(str(path))
    try:
        with p.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: malformed TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"acceptance spec {p}: cannot read: {exc.strerror}") from None
    for name in data:
        if name not in ("spec", "check"):
            raise ConfigError(f"{p}: unknown section [{name}]; known: [spec], [[check]]")
    info = SpecInfo(**_values(SpecInfo, _table(data.get("spec", {}), f"{p} [spec]"),
                              f"{p} [spec]"))
    raw_checks = data.get("check", [])
    if not isinstance(raw_checks, list) or not raw_checks:
        raise ConfigError(f"{p}: no checks; add at least one [[check]] table")
    checks = tuple(build_check(_table(t, f"{p} [[check]] #{i + 1}"), f"{p} [[check]] #{i + 1}",
                               p.parent) for i, t in enumerate(raw_checks))
    seen: set[str] = set()
    for c in checks:
        if c.name in seen:
            raise ConfigError(f"{p}: two checks are named {c.name!r}; names must be unique")
        seen.add(c.name)
    if not info.name:
        info = dataclasses.replace(info, name=p.stem)
    elif not NAME_RE.match(info.name):
        raise ConfigError(f"{p} [spec].name = {info.name!r}: use letters, digits, '.', '_' or "
                          "'-' (it names the JUnit suite)")
    return Spec(info, checks, str(p))


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table")
    return value
