"""A result.json that is no readable JSON object at all (empty, truncated, not UTF-8, nested
past what the parser can hold, a list) is refused in one line with exit code 2 by every command
that opens a result, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import call_cli

# Each, the whole content of result.json.
UNREADABLE = {
    "empty": b"",
    "truncated": b'{"schema": "aiio.result/2", "kind": "run", "id": "x',
    "not_utf8": b'\xff\xfe{"schema": 1}',
    "a_list": b"[]",
    "nested_too_deep": b"[" * 100_000 + b"]" * 100_000,
    "deep_inside_a_result": (b'{"schema": "aiio.result/2", "kind": "run", "aggregate": '
                             + b"[" * 100_000 + b"]" * 100_000 + b"}"),
}


@pytest.mark.parametrize("name", UNREADABLE)
def test_an_unreadable_result_is_one_line_and_exit_2(tmp_path: Path, name: str) -> None:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "result.json").write_bytes(UNREADABLE[name])
    for args in (("report", str(folder)), ("compare", str(folder)),
                 ("size", "--workload", "demo", "--from", str(folder))):
        out = call_cli(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, (args, out.stderr)
        assert str(folder / "result.json") in out.stderr, (args, out.stderr)
