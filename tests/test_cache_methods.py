"""The page-cache methods: one list behind --cache, a spec's cache key and the report's words."""

from __future__ import annotations

import pytest

from aiio.accept.spec import CheckKeys
from aiio.cli.run import run
from aiio.cli.scale import scale
from aiio.report.common import measured_section

RECORDED = ("o_direct", "fadvise_dontneed", "none", "null", "s3")  # every method a result can hold


def _choices(command, name: str) -> tuple[str, ...]:
    (option,) = [p for p in command.params if p.name == name]
    return tuple(option.type.choices)


def test_cli_and_specs_accept_the_same_cache_requests():
    spec = CheckKeys.__dataclass_fields__["cache"].metadata["choices"]
    assert _choices(scale, "method") == tuple(spec)
    assert set(spec) == {"auto", "o_direct", "fadvise_dontneed", "none"}
    assert _choices(run, "method") == (*spec, "null")  # a single run may measure aiio itself


@pytest.mark.parametrize("method", RECORDED)
def test_report_says_what_each_recorded_method_means(method):
    page = str(measured_section({"phase": "train", "method": method, "target": {}}, "2"))
    assert f"{method}: " in page and "unknown method" not in page
