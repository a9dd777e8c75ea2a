"""A number key refuses NaN and infinity: NaN passes every bound check (each comparison is
false), ran a random mix of writes only and wrote NaN, which is not JSON, into the result."""

from __future__ import annotations

import pytest

from aiio.errors import ConfigError
from aiio.workload import load_workload


@pytest.mark.parametrize("section,key,value", [
    ("prep", "read_share", "nan"), ("prep", "read_share", "-inf"),
    ("train", "au_goal", "nan"), ("checkpoint", "scale", "inf"),
    ("train", "compute_time", {"h100": float("nan")}),
])
def test_a_number_that_is_not_finite_is_one_line(section: str, key: str, value) -> None:
    with pytest.raises(ConfigError, match=f"{key}"):
        load_workload("demo", [(section, key, value)])
