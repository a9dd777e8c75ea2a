"""The pure half of the DLIO side-by-side (tools/dlio_figures.py), without DLIO installed:
the truth a read limit gives, and DLIO 2.0.0's own output files read back. The files in
tests/data/dlio are real DLIO 2.0.0 output from the run docs/METHOD.md tabulates (6 ranks
reading 480 npz records of 512 KiB off a 40 MiB/s disk, its third repeat; 2 ranks writing 10
checkpoints of 16 MiB a rank at 32 MiB/s, its third repeat), the summary's host_cpuinfo and
host_meminfo sections left out."""

from __future__ import annotations

import pytest

from tools import dlio_figures as fig

from .conftest import REPO

DATA = REPO / "tests" / "data" / "dlio"
MiB = 2**20


def test_the_demand_is_a_batch_of_records_every_compute_time() -> None:
    assert fig.demand_mib_s(2, 0.1, 512 * 1024) == pytest.approx(10.0)
    # MLPerf's unet3d h100: 7 records of 146,600,628 B every 0.323 s
    assert fig.demand_mib_s(7, 0.323, 146_600_628) == pytest.approx(3029.9, abs=0.05)


def test_the_truth_is_the_most_accelerators_the_limit_carries_at_the_floor() -> None:
    assert fig.truth_supported(40, 10, 0.9) == 4      # 4 x 9 = 36 <= 40 < 45
    assert fig.truth_supported(40, 10, 0.8) == 5      # an exact fit counts
    assert fig.truth_supported(8, 10, 0.9) == 0
    assert fig.truth_au(4, 40, 10) == 1.0
    assert fig.truth_au(5, 40, 10) == pytest.approx(0.8)


def test_dlio_summary_gives_au_samples_and_its_nominal_mb_s() -> None:
    got = fig.dlio_training(DATA / "summary-6-ranks.json")
    assert got["au"] == pytest.approx(0.6619, abs=1e-4)
    assert got["samples_s"] == pytest.approx(73.354, abs=1e-3)
    # DLIO's "MB/s" is samples/s x the record length in MiB, not bytes it measured
    assert got["mib_s"] == pytest.approx(got["samples_s"] * 512 * 1024 / MiB)


def test_dlio_checkpoint_durations_come_in_order_from_its_epoch_stats() -> None:
    seconds = fig.dlio_checkpoint_seconds(DATA / "per_epoch_stats-checkpoints.json")
    assert len(seconds) == 10
    # ckpt1 09:50:32.688147 to 09:50:33.692012; ckpt2 second (not ckpt10); ckpt10 last
    assert seconds[0] == pytest.approx(1.003865)
    assert seconds[1] == pytest.approx(0.991023)
    assert seconds[9] == pytest.approx(1.000655)
    # 32 MiB a checkpoint against a 32 MiB/s write limit: the table's 32.1 MiB/s
    mean_of_rates, over_time = fig.rates(32 * MiB, seconds)
    assert (round(mean_of_rates, 1), round(over_time, 1)) == (32.1, 32.1)


def test_mean_of_rates_reads_over_bytes_over_time_when_durations_differ() -> None:
    mean_of_rates, over_time = fig.rates(16 * MiB, [1.0, 0.5])
    assert mean_of_rates == pytest.approx(24.0)       # (16 + 32) / 2
    assert over_time == pytest.approx(32 / 1.5)       # 32 MiB in 1.5 s


def _s(tool: str, count: int, au: float) -> fig.Sample:
    return fig.Sample(tool, count, au, 0, 0, 0, 0, 0)


def test_supported_is_the_largest_count_whose_mean_au_holds() -> None:
    runs = [_s("aiio", 3, 1.0), _s("aiio", 4, 0.95), _s("aiio", 4, 0.87),
            _s("aiio", 5, 0.8), _s("dlio", 3, 0.92), _s("dlio", 4, 0.88)]
    assert fig.supported(runs, "aiio", 0.9) == 4      # mean 0.91 at 4
    assert fig.supported(runs, "dlio", 0.9) == 3
    assert fig.supported(runs, "dlio", 0.95) == 0
    table = fig.training_table(runs, 40, 10, 0.9)
    assert table[-2].startswith("accelerators supported, dlio: 3 (truth 4")
    assert any(" 91.0 (87.0-95.0)" in line for line in table)
    # no count run held: the answer says which were run, not a count of 0
    table = fig.training_table(runs, 40, 10, 0.95)
    assert table[-2].startswith("accelerators supported, dlio: none of 3, 4, 5 (truth")
