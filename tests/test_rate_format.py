"""A rate reads the same wherever it is shown: console, report, verdict card, acceptance."""

from __future__ import annotations

import pytest

from aiio.figures import FIGURES
from aiio.report import html
from aiio.units import format_rate

SHOWN = [(1234.56, "1,234.6 MiB/s"), (12.25, "12.2 MiB/s"), (0.0123, "0.0123 MiB/s"),
         (0.0, "0.0 MiB/s"), (1_073_741_824, "1,073,741,824.0 MiB/s")]


@pytest.mark.parametrize("value, text", SHOWN)
def test_one_text_for_one_rate(value, text):
    assert format_rate(value) == text
    assert html.mib_s(value) == text  # the report's tables
    for name in ("aggregate_mib_s", "client_mib_s_min"):  # verdict cards, acceptance messages
        assert FIGURES[name].format(value) == text


def test_a_bare_number_under_a_mib_s_heading():
    assert format_rate(1234.56, unit=False) == "1,234.6"
