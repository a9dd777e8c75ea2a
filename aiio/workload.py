"""Workload TOML -> frozen, validated dataclasses.

Each section is a dataclass; its fields *are* the table of known keys (type, default, check live
in the field's metadata), so a key cannot be accepted without being declared, and unknown keys
are errors that name the file and the key.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiio.errors import ConfigError
from aiio.units import GiB, KiB, MiB, format_size, parse_count, parse_duration, parse_size

# The most one read moves on Linux (MAX_RW_COUNT); an io_uring entry's length is 32 bits
MAX_READ = 2 * GiB - 4 * KiB

FORMATS = ("npz", "hdf5", "tfrecord", "raw")
READERS = ("raw", "native")
SHUFFLES = ("sample", "file", "off")
PREP_MODES = ("shards", "randrw")
CHECKPOINT_UNITS = ("epochs", "steps")
AU_RULES = ("mean", "min")  # MLPerf passes on the mean over ranks; min is stricter
STALL_MODELS = ("synchronous", "per_client")
KV_LOADS = ("closed", "open", "trace")
TRACE_FORMATS = ("auto", "burstgpt", "mooncake")
# Shipped models: (layers, KV heads, head dim); bytes per token = layers x heads x dim x 2
# (K and V) x bytes per element (MLPerf Storage's kv_cache_benchmark: 131,072 and 327,680 B)
KV_MODELS = {"llama3.1-8b": (32, 8, 128), "llama3.1-70b": (80, 8, 128)}
KV_GOALS = {"interactive": 0.05, "responsive": 0.1, "batch": 1.0}  # MLPerf's, s at P95
RESTORE_ORDERS = ("each", "all_writes")
GRAPHS = ("nearest", "random", "clustered")


_ACTIVE = object()  # a key with no inert value: every value of it changes what a run does


def key(kind: str, default: Any, help: str, *, min: float | None = None,
        max: float | None = None, gt: float | None = None,
        choices: tuple[str, ...] | None = None, inert: Any = _ACTIVE,
        inert_unless: str | None = None) -> Any:
    """Declare one known key: kind (int, float, str, bool, size, duration, count, map), default,
    check. `inert`: the value at which a key added later changes nothing a run does (a feature
    off); `inert_unless`: the key only acts when that key of its section is not inert. An
    inert key is left out of the settings a run's history series is keyed by, so adding it
    does not start a new series (`inert_keys`)."""
    meta = {"kind": kind, "help": help, "min": min, "max": max, "gt": gt, "choices": choices,
            "inert": inert, "inert_unless": inert_unless}
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class WorkloadInfo:
    name: str = key("str", "custom", "short name shown in results")
    description: str = key("str", "", "one line saying what this workload emulates")


@dataclass(frozen=True)
class RunSpec:
    clients: int = key("int", 2, "emulated accelerators (one OS process each, or threads of "
                       "shared ones past client_processes)", min=1)
    seed: int = key("int", 1, "seed for data contents and shuffling", min=0)
    client_processes: int = key("int", 0, "training: most client processes a host forks; "
                                "more clients share them as threads (0: 256)", min=0,
                                inert=0)


@dataclass(frozen=True)
class DatasetSpec:
    format: str = key("str", "npz", "on-disk format", choices=FORMATS)
    num_files: int = key("int", 64, "files in the dataset", min=1)
    samples_per_file: int = key("int", 1, "samples stored in each file", min=1)
    sample_size: int = key("size", 1 * MiB, "mean sample size", gt=0)
    sample_size_stdev: int = key("size", 0, "standard deviation of the sample size", min=0)
    files_per_dir: int = key("int", 1000, "files per subfolder, as a large dataset is spread",
                             min=1)


@dataclass(frozen=True)
class TrainSpec:
    accelerator: str = key("str", "h100", "emulated accelerator type (a key of compute_time)")
    compute_time: dict = key("map", {"h100": 0.1}, "seconds of compute per batch, per accelerator")
    batch_size: int = key("int", 4, "samples per batch per client", min=1)
    read_threads: int = key("int", 4, "loader threads per client", min=1, max=256)
    prefetch: int = key("int", 2, "batches each loader thread reads ahead", min=1, max=64)
    transfer_size: int = key("size", 1 * MiB, "bytes per read call", gt=0)
    epochs: int = key("int", 1, "passes over the dataset (ignored when duration is set)", min=1)
    duration: float = key("duration", 0.0, "stop after this long instead of after epochs", min=0)
    au_goal: float = key("float", 0.9, "accelerator utilization the run must reach",
                         gt=0, max=1)
    au_rule: str = key("str", "mean", "AU pass rule: mean over clients (MLPerf) or min (every "
                       "client)", choices=AU_RULES)
    reader: str = key("str", "raw", "raw: aligned reads; native: the format's own library",
                      choices=READERS)
    shuffle: str = key("str", "sample", "each epoch reshuffle samples, only the file order, or off",
                       choices=SHUFFLES)


@dataclass(frozen=True)
class ModelSpec:
    """The model behind the workload: what checkpoints, sizing and model loading are made of."""

    name: str = key("str", "", "model name, e.g. llama3-70b")
    parameters: float = key("count", 0.0, "parameter count, e.g. 70B (0: no model given)", min=0)
    bytes_per_parameter: float = key(
        "float", 14.0, "checkpoint bytes per parameter: bf16 weights + fp32 optimizer state",
        gt=0)
    ranks: int = key("int", 0, "ranks MLPerf Storage writes this checkpoint with (0: none)",
                     min=0)


@dataclass(frozen=True)
class TransformerSpec:
    """The model's shape and parallelism, as DLIO's checkpoint formula takes them (MLPerf
    Storage's llama3 configs): sizes and lays out checkpoint files rank by rank."""

    layers: int = key("int", 0, "transformer layers (0: no shape; the checkpoint is model "
                      "parameters x bytes per parameter)", min=0)
    hidden_size: int = key("int", 4096, "hidden size", min=1)
    ffn_hidden_size: int = key("int", 14336, "MLP hidden size (a gated MLP)", min=1)
    attention_heads: int = key("int", 32, "attention heads", min=1)
    kv_heads: int = key("int", 8, "key/value heads (grouped-query attention)", min=1)
    vocab_size: int = key("int", 128256, "vocabulary size", min=1)
    tensor_parallel: int = key("int", 1, "tensor-parallel ranks (TP)", min=1)
    pipeline_parallel: int = key("int", 1, "pipeline stages (PP)", min=1)
    zero_stage: int = key("int", 3, "ZeRO stage: 3 shards the model over data-parallel ranks; "
                          "1 and 2 save it from data-parallel rank 0", min=0, max=3)
    model_bytes: int = key("int", 2, "bytes per model parameter (fp16: 2)", min=1, max=8)
    optimizer_bytes: int = key("int", 4, "bytes per optimizer state value (fp32: 4)", min=1,
                               max=8)


@dataclass(frozen=True)
class PrepSpec:
    """Data preparation: raw samples in, processed shards out, plus the metadata work; or
    the fio-style random read/write mix on large files."""

    mode: str = key("str", "shards", "shards: read raw samples, write processed shards; "
                    "randrw: random reads and writes on one large file per client",
                    choices=PREP_MODES)
    threads: int = key("int", 4, "I/O threads per client", min=1, max=256)
    transfer_size: int = key("size", 1 * MiB, "bytes per read or write call (shards mode)",
                             gt=0)
    passes: int = key("int", 1, "passes over the raw samples (shards mode)", min=1)
    transform_time: float = key("duration", 0.0, "processing time per sample (shards mode)",
                                min=0)
    shard_size: int = key("size", 128 * MiB, "processed shard file size (shards mode)", gt=0)
    output_ratio: float = key("float", 1.0, "processed bytes written per raw byte read "
                              "(shards mode)", gt=0, max=100)
    file_size: int = key("size", 1 * GiB, "file per client (randrw mode)", gt=0)
    block_size: int = key("size", 4 * KiB, "bytes per random I/O (randrw mode)", gt=0)
    read_share: float = key("float", 0.7, "share of random I/Os that are reads (randrw mode; "
                            "fio's rwmixread / 100)", min=0, max=1)
    duration: float = key("duration", 10.0, "how long the randrw mix runs", gt=0)
    iodepth: int = key("int", 1, "reads in flight per thread through io_uring (randrw mode, "
                       "reads only; 1: synchronous reads)", min=1, max=1024)


@dataclass(frozen=True)
class CheckpointSpec:
    """Checkpoint bursts: every client writes its shard and fsyncs; then the restore."""

    size: int = key("size", 0, "total checkpoint bytes (0: model parameters x bytes per "
                    "parameter)", min=0)
    scale: float = key("float", 1.0, "multiply the checkpoint bytes by this (small test "
                       "systems; --scale)", gt=0)
    files_per_client: int = key("int", 1, "files each client writes per checkpoint", min=1,
                                max=4096)
    threads: int = key("int", 1, "writer threads per client", min=1, max=64)
    transfer_size: int = key("size", 1 * MiB, "bytes per write or read call", gt=0)
    count: int = key("int", 1, "checkpoints written one after another (--checkpoints)", min=1)
    keep: int = key("int", 1, "most recent checkpoints kept; older ones are deleted", min=1)
    restore: bool = key("bool", True, "read every shard back after each checkpoint")
    restore_within: float = key("duration", 30.0, "the restore must start this soon after "
                                "the write (MLPerf Storage: 30 s)", gt=0)
    restore_after: str = key("str", "each", "each: read each checkpoint back once it is "
                             "durable; all_writes: write every checkpoint, then read them all "
                             "back (MLPerf Storage; needs keep >= count)", choices=RESTORE_ORDERS)
    every: int = key("int", 0, "train phase: checkpoint every N epochs or steps "
                     "(--checkpoint-every; 0: never)", min=0)
    every_unit: str = key("str", "epochs", "unit of `every`", choices=CHECKPOINT_UNITS)
    stall_model: str = key("str", "synchronous", "synchronous: every accelerator waits until "
                           "the last shard is durable (MLPerf Storage); per_client: each waits "
                           "for its own shard", choices=STALL_MODELS)


@dataclass(frozen=True)
class LoadSpec:
    """Model loading for inference: every replica reads the whole set of weight files."""

    size: int = key("size", 0, "bytes of weights (0: model parameters x bytes_per_parameter)",
                    min=0)
    bytes_per_parameter: float = key("float", 2.0, "weight bytes per parameter (bf16: 2)",
                                     gt=0)
    scale: float = key("float", 1.0, "multiply the weight bytes by this (--scale)", gt=0)
    files: int = key("int", 1, "weight files (safetensors-style shards)", min=1, max=4096)
    threads: int = key("int", 1, "reader threads per replica", min=1, max=64)
    transfer_size: int = key("size", 1 * MiB, "bytes per read call", gt=0)
    stagger: float = key("duration", 0.0, "replica i starts i x stagger after the first "
                         "(--stagger)", min=0)


@dataclass(frozen=True)
class KvcacheSpec:
    """LLM inference's KV-cache offload: users' requests write and read back KV blocks."""

    model: str = key("str", "llama3.1-8b", "model whose KV cache is stored: a shipped one "
                     f"({', '.join(KV_MODELS)}), or any name with layers, kv_heads, head_dim")
    layers: int = key("int", 0, "a model of your own: transformer layers", min=0)
    kv_heads: int = key("int", 0, "a model of your own: KV heads per layer", min=0)
    head_dim: int = key("int", 0, "a model of your own: dimension of a head", min=0)
    bytes_per_element: int = key("int", 2, "bytes per K or V element (bf16: 2)", min=1, max=8)
    block_tokens: int = key("int", 256, "tokens per KV block, one file or object each", min=1)
    users: int = key("int", 8, "concurrent users each client serves", min=1, max=4096)
    context_tokens: int = key("int", 2048, "mean prompt tokens of a conversation's first turn",
                              min=1)
    context_stdev: int = key("int", 0, "standard deviation of those tokens", min=0)
    generation_tokens: int = key("int", 128, "mean tokens generated per request", min=0)
    generation_stdev: int = key("int", 0, "standard deviation of those tokens", min=0)
    turns: int = key("int", 1, "requests per conversation; later turns reuse its blocks",
                     min=1)
    followup_tokens: int = key("int", 256, "new prompt tokens of each later turn", min=0)
    max_context_tokens: int = key("int", 16384, "longest context: a conversation that would "
                                  "grow past it ends", min=1)
    system_prompt_tokens: int = key("int", 0, "tokens of a system prompt conversations share",
                                    min=0)
    system_prompts: int = key("int", 1, "distinct shared system prompts", min=1)
    gpu_cache: int = key("size", 0, "GPU memory tier per client (in memory, LRU)", min=0)
    host_cache: int = key("size", 0, "host memory tier per client (in memory, LRU)", min=0)
    duration: float = key("duration", 30.0, "how long users send requests", gt=0)
    load: str = key("str", "closed", "closed: users with think time; open: a request rate; "
                    "trace: replay a trace's arrivals and lengths", choices=KV_LOADS)
    think_time: float = key("duration", 0.0, "closed loop: a user's pause between requests",
                            min=0)
    request_rate: float = key("float", 1.0, "open loop: requests per second per client",
                              gt=0)
    trace: str = key("str", "", "trace file: BurstGPT CSV or Mooncake JSONL (load = trace)")
    trace_format: str = key("str", "auto", "the trace's format (auto: by file extension)",
                            choices=TRACE_FORMATS)
    trace_speed: float = key("float", 1.0, "replay this many times faster than recorded",
                             gt=0)
    transfer_size: int = key("size", 1 * MiB, "bytes per read or write call", gt=0)
    goals: dict = key("map", KV_GOALS, "latency goal in s of each request class, met when "
                      "the pooled P95 of requests' latency (queue wait + storage time) is "
                      "within it", gt=0)

    @property
    def shape(self) -> tuple[int, int, int]:
        """(layers, KV heads, head dim): a model of the TOML's own, else a shipped one."""
        own = (self.layers, self.kv_heads, self.head_dim)
        return own if any(own) else KV_MODELS[self.model]

    @property
    def bytes_per_token(self) -> int:
        layers, heads, dim = self.shape
        return layers * heads * dim * 2 * self.bytes_per_element

    @property
    def block_bytes(self) -> int:
        return self.block_tokens * self.bytes_per_token


@dataclass(frozen=True)
class VectorSpec:
    """Vector search on a DiskANN-style disk index: node records of a full vector and its
    neighbour ids in sectors, searched by beam search (MLPerf Storage's vector database)."""

    vectors: int = key("int", 100_000, "vectors in the index (N)", min=2)
    dimensions: int = key("int", 128, "dimensions of each vector (D)", min=1, max=65_536)
    element_size: int = key("int", 4, "bytes per vector element (4: float32, 2: float16, "
                            "1: int8)", min=1, max=8)
    max_degree: int = key("int", 64, "neighbour ids in each node's record (R; every node has "
                          "this out-degree)", min=1, max=1024)
    sector_size: int = key("size", 4 * KiB, "bytes per sector, the unit of every read", gt=0)
    graph: str = key("str", "nearest", "nearest: a quarter of a node's neighbours its "
                     "nearest vectors, the rest anywhere (as DiskANN's graph); random: "
                     "neighbours anywhere; clustered: most neighbours in the node's own run "
                     "of ids", choices=GRAPHS)
    beam_width: int = key("int", 4, "node reads in flight per hop (W)", min=1, max=64)
    search_list: int = key("int", 100, "candidate list size (L)", min=1, max=10_000)
    top_k: int = key("int", 10, "nearest vectors a query returns (k)", min=1)
    concurrency: int = key("int", 1, "queries in flight per client (closed loop)", min=1,
                           max=256)
    rate: float = key("float", 0.0, "queries offered per second per client (open loop; "
                      "0: closed loop at `concurrency`)", min=0)
    duration: float = key("duration", 10.0, "how long the queries run", gt=0)
    queries: int = key("int", 0, "queries per client, then stop (0: run for `duration`)",
                       min=0)
    reader: str = key("str", "raw", "raw: aiio's beam search over its own index; native: "
                      "queries through diskannpy on a real DiskANN disk index (--reader)",
                      choices=("raw", "native"), inert="raw")
    insert_rate: float = key("float", 0.0, "vectors inserted per second per client while the "
                             "queries run (open loop, FreshDiskANN's insert stream; 0: none)",
                             min=0, inert=0.0)
    insert_sync: int = key("int", 16, "inserts appended to a client's insert log between two "
                           "fsyncs (group commit: an insert is durable at the fsync after it)",
                           min=1, inert_unless="insert_rate")
    merge_every: int = key("int", 1000, "inserts held in a client's in-memory index that start "
                           "a streaming merge into a new disk index", min=1,
                           inert_unless="insert_rate")


# S3's multipart limits: every part but the last 5 MiB..5 GiB, at most 10,000 parts an object.
MIN_PART_SIZE, MAX_PART_SIZE, MAX_PARTS = 5 * MiB, 5 * GiB, 10_000


@dataclass(frozen=True)
class S3Spec:
    """Object storage (s3:// targets only)."""

    part_size: int = key("size", 8 * MiB, "multipart part size of dataset, checkpoint and "
                         "weight uploads (--part-size; S3: 5 MiB..5 GiB, at most 10,000 parts "
                         "an object)", gt=0)


@dataclass(frozen=True)
class Workload:
    """A resolved workload: every section validated, every default filled in."""

    workload: WorkloadInfo = field(default_factory=WorkloadInfo)
    run: RunSpec = field(default_factory=RunSpec)
    dataset: DatasetSpec = field(default_factory=DatasetSpec)
    train: TrainSpec = field(default_factory=TrainSpec)
    model: ModelSpec = field(default_factory=ModelSpec)
    transformer: TransformerSpec = field(default_factory=TransformerSpec)
    prep: PrepSpec = field(default_factory=PrepSpec)
    checkpoint: CheckpointSpec = field(default_factory=CheckpointSpec)
    load: LoadSpec = field(default_factory=LoadSpec)
    kvcache: KvcacheSpec = field(default_factory=KvcacheSpec)
    vector: VectorSpec = field(default_factory=VectorSpec)
    s3: S3Spec = field(default_factory=S3Spec)
    source: str = ""
    given: tuple[str, ...] = ()  # sections the file itself had (the rest are defaults)

    @property
    def name(self) -> str:
        return self.workload.name

    @property
    def compute_time(self) -> float:
        """Compute seconds per batch for the chosen accelerator."""
        return float(self.train.compute_time[self.train.accelerator])

    @property
    def num_samples(self) -> int:
        return self.dataset.num_files * self.dataset.samples_per_file

    @property
    def dataset_bytes(self) -> int:
        """Expected dataset size from the mean sample size (the manifest holds the real one)."""
        return self.num_samples * self.dataset.sample_size

    def demand_mib_s(self) -> float:
        """Read rate one accelerator needs: batch x mean sample size / compute time."""
        return self.train.batch_size * self.dataset.sample_size / MiB / self.compute_time

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: dataclasses.asdict(getattr(self, f.name)) for f in _sections()}
        out["source"] = self.source
        out["given"] = list(self.given)
        return out


def _sections() -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(Workload) if f.name not in ("source", "given")]


def inert_keys(section: str, values: dict[str, Any]) -> set[str]:
    """The keys of one recorded section whose values change nothing a run does: at their
    inert value, or acting only with a key that is at its own."""
    spec = {f.name: f.type for f in _sections()}.get(section)
    if spec is None or not isinstance(values, dict):
        return set()
    meta = {f.name: f.metadata for f in dataclasses.fields(globals()[spec])}

    def inert(name: str) -> bool:
        m = meta.get(name)
        return m is not None and name in values and m.get("inert", _ACTIVE) is not _ACTIVE \
            and values[name] == m["inert"]
    return {name for name, m in meta.items() if name in values
            and (inert(name) or (m.get("inert_unless") and inert(m["inert_unless"])))}


# --- where workloads live ---------------------------------------------------------------

SHIPPED = "shipped"
ENV = "AIIO_WORKLOADS"
CONFIG = "config dir"
ACCEPTANCE = "acceptance"  # subfolder of a workload folder holding acceptance specs


def workloads_dir() -> Path:
    """The shipped workloads folder, inside the installed package (workloads/ in a checkout)."""
    return Path(str(importlib.resources.files("aiio.workloads")))


def config_workloads_dir() -> Path:
    """The user's own workloads in the platform config folder: $XDG_CONFIG_HOME/aiio/workloads,
    else ~/.config/aiio/workloads."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "aiio" / "workloads"


def workload_folders() -> list[tuple[str, Path]]:
    """Where workloads are looked up, first match wins: each folder of AIIO_WORKLOADS
    (os.pathsep-separated), the config folder, then the shipped ones."""
    folders = [(ENV, Path(p)) for p in os.environ.get(ENV, "").split(os.pathsep) if p]
    return folders + [(CONFIG, config_workloads_dir()), (SHIPPED, workloads_dir())]


def _scan(sub: str = "") -> dict[str, tuple[str, Path]]:
    """Every *.toml in the `sub` subfolder of each workload folder: name -> (where it came
    from, its file); earlier folders win."""
    found: dict[str, tuple[str, Path]] = {}
    for source, folder in workload_folders():
        where = folder / sub if sub else folder
        for path in sorted(where.glob("*.toml")) if where.is_dir() else ():
            found.setdefault(path.stem, (source, path))
    return dict(sorted(found.items()))


def find_workloads() -> dict[str, tuple[str, Path]]:
    """Every workload name found -> (where it came from, its file); earlier folders win."""
    return _scan()


def find_specs() -> dict[str, tuple[str, Path]]:
    """Every acceptance spec found in an acceptance/ subfolder of the workload folders."""
    return _scan(ACCEPTANCE)


def shipped_workloads() -> list[str]:
    """Every workload name that can be given by name (shipped or the user's own folders)."""
    return list(find_workloads())


def _resolve(name_or_path: str, what: str, found: dict[str, tuple[str, Path]]) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or os.sep in name_or_path:
        if not candidate.is_file():
            raise ConfigError(f"{what} file {name_or_path} does not exist")
        return candidate
    if name_or_path not in found:
        names = ", ".join(found) or "none found"
        raise ConfigError(f"unknown {what} {name_or_path!r}; known: {names} "
                          "(or give a path to a .toml file)")
    return found[name_or_path][1]


def resolve_path(name_or_path: str) -> Path:
    """A workload name (see workload_folders), or a path to the user's own TOML file."""
    return _resolve(name_or_path, "workload", find_workloads())


def resolve_spec(name_or_path: str) -> Path:
    """An acceptance spec name (the acceptance/ subfolders), or a path to a spec file."""
    return _resolve(name_or_path, "acceptance spec", find_specs())


# --- parsing and checking values ----------------------------------------------------------

def _coerce(kind: str, value: Any, where: str) -> Any:
    """Turn a TOML value or a CLI string into the key's kind."""
    try:
        if kind == "size":
            return parse_size(value)
        if kind == "duration":
            return parse_duration(value)
        if kind == "count":
            return parse_count(value)
        if kind == "int":
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(value)
        if kind == "float":
            if isinstance(value, bool):
                raise ValueError
            return _finite(float(value))
        if kind == "bool":
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("true", "yes", "1", "on"):
                return True
            if str(value).lower() in ("false", "no", "0", "off"):
                return False
            raise ValueError
        if kind == "str":
            if not isinstance(value, str):
                raise ValueError
            return value
        if kind == "map":
            if not isinstance(value, dict):
                raise ValueError
            return {str(k): _finite(float(v)) for k, v in value.items()}
    except (ValueError, TypeError, ConfigError) as exc:
        raise ConfigError(f"{where}: cannot read {value!r} as {kind}") from exc
    raise AssertionError(f"unknown key kind {kind}")


def _finite(x: float) -> float:
    """NaN passes every bound (each comparison is false) and is not JSON: refused, as is inf."""
    if not math.isfinite(x):
        raise ValueError
    return x


def _check(meta: dict, value: Any, where: str) -> None:
    if meta["choices"] and value not in meta["choices"]:
        raise ConfigError(f"{where} = {value!r} is not one of {', '.join(meta['choices'])}")
    values = value.values() if isinstance(value, dict) else [value]
    for v in values:
        if isinstance(v, str):
            continue
        if meta["gt"] is not None and not v > meta["gt"]:
            raise ConfigError(f"{where} = {v!r} must be greater than {meta['gt']}")
        if meta["min"] is not None and v < meta["min"]:
            raise ConfigError(f"{where} = {v!r} must be at least {meta['min']}")
        if meta["max"] is not None and v > meta["max"]:
            raise ConfigError(f"{where} = {v!r} must be at most {meta['max']}")


def _build_section(cls: type, table: dict[str, Any], where: str,
                   section: str = "", overridden: frozenset[str] = frozenset()) -> Any:
    """The section's dataclass; a bad value is named where it came from: the file, or an
    override of it (`--clients 0` is no value of the file's)."""
    known = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for name, raw in table.items():
        if name not in known:
            raise ConfigError(f"{where}: unknown key {name!r}; known keys: {', '.join(known)}")
        meta = known[name].metadata
        at = f"override [{section}].{name}" if name in overridden else f"{where}.{name}"
        value = _coerce(meta["kind"], raw, at)
        _check(meta, value, at)
        values[name] = value
    return cls(**values)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: malformed TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc


def split_override(text: str) -> tuple[str, str, str]:
    """'train.batch_size=8' -> ('train', 'batch_size', '8')."""
    name, sep, value = text.partition("=")
    section, dot, key_name = name.strip().partition(".")
    if not sep or not dot or not key_name:
        raise ConfigError(f"--set {text!r}: expected section.key=value, e.g. train.batch_size=8")
    return section, key_name.strip(), value.strip()


def build(data: dict[str, Any], source: str,
          overrides: list[tuple[str, str, Any]] = ()) -> Workload:
    """Validate a parsed TOML document plus overrides into a Workload."""
    sections = {f.name: f for f in _sections()}
    tables: dict[str, dict[str, Any]] = {}
    for name, table in data.items():
        if name not in sections:
            raise ConfigError(f"{source}: unknown section [{name}]; known: {', '.join(sections)}")
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: {name} must be a [{name}] table")
        tables[name] = dict(table)
    overridden: dict[str, set[str]] = {}
    for section, key_name, value in overrides:
        if section not in sections:
            raise ConfigError(f"unknown section {section!r} in override {section}.{key_name}; "
                              f"known: {', '.join(sections)}")
        table = tables.setdefault(section, {})
        base, dot, entry = key_name.partition(".")
        overridden.setdefault(section, set()).add(base)
        if dot:  # one entry of a map key, e.g. train.compute_time.h100=0.3
            default = getattr(sections[section].default_factory(), base, None)
            if not isinstance(default, dict):
                raise ConfigError(f"{section}.{base} is not a table; cannot set {key_name}")
            table[base] = {**default, **table.get(base, {}), entry: value}
        else:
            table[key_name] = value
    built = {name: _build_section(f.default_factory, tables.get(name, {}), f"{source} [{name}]",
                                  name, frozenset(overridden.get(name, ())))
             for name, f in sections.items()}
    workload = Workload(**built, source=source, given=tuple(data))
    validate(workload)
    return workload


def validate(w: Workload) -> None:
    """Checks that span keys."""
    if not re.fullmatch(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]*", w.name):
        # it names the dataset's folder and lock file, and the results' folders
        raise ConfigError(f"workload.name = {w.name!r}: use letters, digits and ._+- (not "
                          "first a dot), e.g. my-unet3d: it names folders")
    if w.train.accelerator not in w.train.compute_time:
        known = ", ".join(sorted(w.train.compute_time))
        raise ConfigError(f"workload {w.name}: unknown accelerator {w.train.accelerator!r}; "
                          f"this workload knows: {known}")
    if w.train.batch_size > w.num_samples:
        raise ConfigError(f"workload {w.name}: batch size {w.train.batch_size} is larger than "
                          f"the dataset ({w.num_samples} samples)")
    if w.train.transfer_size % 4096:
        raise ConfigError(f"transfer size {w.train.transfer_size} B must be a multiple of 4 KiB "
                          "(O_DIRECT needs aligned lengths)")
    aligned = [("prep.transfer_size", w.prep.transfer_size),
               ("prep.block_size", w.prep.block_size),
               ("checkpoint.transfer_size", w.checkpoint.transfer_size),
               ("load.transfer_size", w.load.transfer_size)]
    for name, value in aligned:
        if value % 4096:
            raise ConfigError(f"{name} = {value} B must be a multiple of 4 KiB "
                              "(O_DIRECT needs aligned lengths)")
    if not MIN_PART_SIZE <= w.s3.part_size <= MAX_PART_SIZE:
        raise ConfigError(f"s3.part_size = {format_size(w.s3.part_size)}: S3 takes parts of "
                          "5 MiB to 5 GiB (--part-size)")
    if w.s3.part_size % (4 * KiB):  # aiio.engines.blocks.BLOCK, not imported: config loads no numpy
        # each part is stamped as whole 4 KiB blocks from its start: a part ending mid-block
        # would put every later part's headers at the wrong offsets (--verify: all corrupt)
        raise ConfigError(f"s3.part_size = {w.s3.part_size} B must be a multiple of 4 KiB "
                          "(--part-size; aiio's blocks are 4 KiB)")
    if w.prep.iodepth > 1 and w.prep.read_share < 1:
        raise ConfigError(f"prep.iodepth = {w.prep.iodepth} needs prep.read_share = 1: the "
                          "queue-depth path reads only (set prep.iodepth = 1 for a mix)")
    if w.prep.iodepth > 1 and w.prep.block_size > MAX_READ:
        raise ConfigError(f"prep.block_size = {format_size(w.prep.block_size)} at prep.iodepth "
                          f"= {w.prep.iodepth}: one read moves at most 2 GiB - 4 KiB (Linux's "
                          "limit); use a smaller block")
    _validate_kvcache(w.kvcache)
    validate_vector(w.vector)
    if w.prep.block_size > w.prep.file_size:
        raise ConfigError(f"prep.block_size ({w.prep.block_size} B) is larger than "
                          f"prep.file_size ({w.prep.file_size} B)")


def _validate_kvcache(k: KvcacheSpec) -> None:
    own = (k.layers, k.kv_heads, k.head_dim)
    if any(own) and not all(own):
        raise ConfigError("kvcache: a model of your own needs layers, kv_heads and head_dim, "
                          "each at least 1")
    if not any(own) and k.model not in KV_MODELS:
        raise ConfigError(f"kvcache.model = {k.model!r} is not shipped ({', '.join(KV_MODELS)});"
                          " give layers, kv_heads and head_dim for a model of your own")
    if k.transfer_size % 4096:
        raise ConfigError(f"kvcache.transfer_size = {k.transfer_size} B must be a multiple of "
                          "4 KiB (O_DIRECT needs aligned lengths)")
    if k.system_prompt_tokens >= k.max_context_tokens:
        raise ConfigError(f"kvcache.system_prompt_tokens ({k.system_prompt_tokens}) leaves no "
                          f"room in kvcache.max_context_tokens ({k.max_context_tokens})")
    if k.load == "trace" and not k.trace:
        raise ConfigError("kvcache.load = \"trace\" needs kvcache.trace, a BurstGPT CSV or a "
                          "Mooncake JSONL file")


def validate_vector(v: VectorSpec) -> None:
    """The index's shape: whole 4 KiB sectors, a list that holds a beam, a degree below N."""
    if v.sector_size % (4 * KiB):
        raise ConfigError(f"vector.sector_size = {v.sector_size} B must be a multiple of "
                          "4 KiB (O_DIRECT needs aligned reads)")
    if v.max_degree >= v.vectors:
        raise ConfigError(f"vector.max_degree = {v.max_degree} needs more than that many "
                          f"vectors (vector.vectors = {v.vectors})")
    if v.top_k > v.search_list:
        raise ConfigError(f"vector.top_k = {v.top_k} is more than the search list holds "
                          f"(vector.search_list = {v.search_list})")
    if v.vectors >= 2**32:
        raise ConfigError(f"vector.vectors = {v.vectors}: node ids are 32 bits, as DiskANN's")
    if v.insert_rate and v.queries:
        raise ConfigError(f"vector.insert_rate = {v.insert_rate:g} runs for vector.duration: "
                          f"set vector.queries = 0 (it is {v.queries})")


def load_workload(name_or_path: str, overrides: list[tuple[str, str, Any]] = ()) -> Workload:
    """Resolve, read and validate a workload; overrides are (section, key, value)."""
    path = resolve_path(name_or_path)
    return build(_read_toml(path), str(path), overrides)
