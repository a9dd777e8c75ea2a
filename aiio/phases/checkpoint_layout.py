"""A transformer's checkpoint files rank by rank, by the formula DLIO uses for MLPerf Storage.

Ranks are TP x PP x DP (tensor-, pipeline-, data-parallel). Each rank saves an optimizer shard
(three fp32 states of its share of the parameters, plus 5 x hidden per state); the model's fp16
layers are saved as ZeRO places them: at stage 3 every rank one file of its slice of every
layer it holds; at stages 1 and 2 data-parallel rank 0 alone, one file per layer when the model
is pipelined (the embedding, the head and the tiny final-norm file among them), else one file.
At stage 0 only the first TP x PP ranks save. File names are DLIO's, so a listing compares.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiio.errors import ConfigError
from aiio.workload import Workload


@dataclass(frozen=True)
class Shape:
    """What the formula needs; the workload's [transformer] section fills it."""

    layers: int
    hidden_size: int
    ffn_hidden_size: int
    attention_heads: int
    kv_heads: int
    vocab_size: int
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    zero_stage: int = 3
    ranks: int = 1
    model_bytes: int = 2      # fp16
    optimizer_bytes: int = 4  # fp32

    @property
    def model_parallel(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def data_parallel(self) -> int:
        return self.ranks // self.model_parallel


def check(s: Shape) -> None:
    """Shapes the formula cannot lay out, named."""
    if s.ranks % s.model_parallel:
        raise ConfigError(f"transformer: {s.ranks} ranks are not a multiple of tensor x "
                          f"pipeline parallel = {s.model_parallel}")
    if s.pipeline_parallel > s.layers:
        raise ConfigError(f"transformer: {s.pipeline_parallel} pipeline stages for "
                          f"{s.layers} layers")


def _kv_width(s: Shape) -> int:
    # the head width rounds down, as DLIO's does (the 1T shape's 25,872 / 192 is 134.75)
    return s.hidden_size // s.attention_heads * s.kv_heads


def _block(s: Shape) -> int:
    """Parameters of one transformer layer: two norms, QKV, the output projection, a gated MLP."""
    h = s.hidden_size
    return 2 * h + h * (h + 2 * _kv_width(s)) + h * h + 3 * h * s.ffn_hidden_size


def parameters(s: Shape) -> int:
    """The model's parameters: embedding, layers, final norm, an untied head."""
    embedding = s.vocab_size * s.hidden_size
    return 2 * embedding + s.layers * _block(s) + s.hidden_size


def layer_parameters(s: Shape, index: int) -> list[int]:
    """One rank's tensors of layer `index`: 0 the embedding, layers+1 the head, layers+2 the
    final norm, the rest transformer layers (split over TP, and over DP at ZeRO 3)."""
    h, tp = s.hidden_size, s.tensor_parallel
    shard = s.data_parallel if s.zero_stage >= 3 else 1
    if index in (0, s.layers + 1):
        return [h * s.vocab_size // tp // shard]
    if index == s.layers + 2:
        return [h // shard]
    return [h // shard, h * (h + 2 * _kv_width(s)) // tp // shard, h * h // tp // shard,
            h // shard, h * 2 * s.ffn_hidden_size // tp // shard,
            h * s.ffn_hidden_size // tp // shard]


def layer_range(s: Shape, stage: int) -> range:
    """The layer indexes a pipeline stage holds; the first spare layers go to the first stages."""
    per, spare = divmod(s.layers, s.pipeline_parallel)
    start = stage * per + min(stage, spare) + 1
    end = start + per - (stage >= spare)
    if stage == s.pipeline_parallel - 1:
        end = s.layers + 2
    if stage == 0:
        start = 0
    return range(start, end + 1)


def _optimizer_bytes(s: Shape) -> int:
    share = s.data_parallel * s.model_parallel if s.zero_stage > 0 else s.model_parallel
    n = parameters(s) // share
    return 3 * (n + 5 * s.hidden_size) * s.optimizer_bytes if n > 0 else 0


def _model_files(s: Shape, rank: int) -> list[tuple[str, int]]:
    mp, dp = rank % s.model_parallel, rank // s.model_parallel
    stage = (rank // s.tensor_parallel) % s.pipeline_parallel
    sizes = {i: sum(layer_parameters(s, i)) * s.model_bytes for i in layer_range(s, stage)}
    if s.zero_stage in (0, 3):
        return [(f"zero_pp_rank_{dp}_mp_rank_{mp}_model_states", sum(sizes.values()))]
    if dp != 0:
        return []
    if s.pipeline_parallel > 1:
        return [(f"layer_{i}-model_{mp}_model_states", n) for i, n in sizes.items()]
    return [(f"model_{mp}_model_states", sum(sizes.values()))]


def rank_files(s: Shape, rank: int) -> list[tuple[str, int]]:
    """(DLIO's file name, bytes) of every file one rank saves per checkpoint."""
    if s.zero_stage == 0 and rank >= s.model_parallel:
        return []  # without ZeRO the first model-parallel group alone saves
    files = _model_files(s, rank)
    optim = _optimizer_bytes(s)
    if optim:
        mp, dp = rank % s.model_parallel, rank // s.model_parallel
        files.append((f"zero_pp_rank_{dp}_mp_rank_{mp}_optim_states", optim))
    return files


def layout_of(s: Shape) -> list[list[tuple[str, int]]]:
    """Every rank's files, rank 0 first."""
    check(s)
    return [rank_files(s, r) for r in range(s.ranks)]


def totals(s: Shape) -> tuple[int, int]:
    """(bytes, files) of one checkpoint."""
    layout = layout_of(s)
    return sum(n for files in layout for _, n in files), sum(map(len, layout))


def total_bytes(s: Shape) -> int:
    return totals(s)[0]


def shape_of(w: Workload) -> Shape | None:
    """The workload's shape over MLPerf's rank count (model.ranks), or None when it gives no
    layers."""
    t = w.transformer
    if t.layers == 0:
        return None
    if w.model.ranks == 0:
        raise ConfigError(f"workload {w.name}: [transformer] needs model.ranks, the ranks "
                          "the checkpoint is laid out over (TP x PP x DP)")
    return Shape(t.layers, t.hidden_size, t.ffn_hidden_size, t.attention_heads, t.kv_heads,
                 t.vocab_size, t.tensor_parallel, t.pipeline_parallel, t.zero_stage,
                 w.model.ranks, t.model_bytes, t.optimizer_bytes)
