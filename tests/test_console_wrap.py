"""On an 80-column terminal, a sweep's verdict sentences, caveats and warnings wrap under their
own text: a continuation line never starts at the left edge, where it reads as a new item."""

from __future__ import annotations

from pathlib import Path

from aiio.results import result
from aiio.term.sweep_console import print_sweep

from .conftest import widest

STORED = Path(__file__).parent / "data" / "results-v1" / "20261130-230558-scale-train-demo-c1_2"
ITEM_STARTS = ("  - ", "  caveat: ", "warning (", "verdict: ", "find-max: ", "chart: ",
               "result: ")


def test_long_sentences_wrap_under_their_own_text(monkeypatch, capsys, tmp_path) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    sweep = dict(result.load(STORED))
    sweep["verdict"] = dict(sweep["verdict"], caveats=[
        "the client machine's CPUs were saturated at client counts 1 (100 %), 2 (100 %): "
        "a knee there may be the client's, not the storage's"])
    sweep["warnings"] = [{"code": "client_cpu_saturated", "clients": [1, 2], "message":
                          "the client machine's CPUs were 100 % busy on average: the "
                          "client, not the storage, may be the bottleneck"}]
    print_sweep(sweep, tmp_path)
    text = capsys.readouterr().out
    tail = text[text.index("verdict: "):].splitlines()
    # paths stay whole, to be copied: the terminal folds them
    assert widest("\n".join(tail)) <= 80
    assert f"result: {tmp_path}/result.json" in tail
    loose = [line for line in tail if line and not line.startswith(ITEM_STARTS)
             and not line.startswith("    ")]
    assert not loose, "\n".join(tail)
    assert sum(line.startswith("  - ") for line in tail) == len(sweep["verdict"]["statements"])


def test_the_fio_command_for_a_hero_stays_whole_to_be_copied(monkeypatch, capsys,
                                                              tmp_path) -> None:
    """No fio result to pair with: the table says so in a few words, and the command that
    makes one is printed whole on one line below it (right-aligned in a table cell, an
    80-column console broke it over four lines that could not be pasted)."""
    from aiio.term.console import phase_tables, print_result

    monkeypatch.setenv("COLUMNS", "80")
    res = dict(result.load(STORED.parent.parent / "results-v2" / "20261201-124017-train-demo-c4"))
    print_result(res, tmp_path, phase_tables(res))
    lines = capsys.readouterr().out.splitlines()
    reason, _, command = res["hero"]["text"].partition("; run: ")
    assert command.startswith("aiio fio --target")
    assert f"fio, to pair this run with: {command}" in lines
    (row,) = [line for line in lines if "% of fio hero" in line]
    assert reason in row


def test_a_lifecycle_prints_each_stages_fio_command(monkeypatch, capsys, tmp_path) -> None:
    """The lifecycle's stage tables name no command; each stage's is printed below them."""
    from aiio.term.console import phase_tables, print_result

    monkeypatch.setenv("COLUMNS", "80")
    folder = STORED.parent / "20261130-230544-all-demo-c2"
    res = dict(result.load(folder))
    print_result(res, tmp_path, phase_tables(res))
    out = capsys.readouterr().out
    for stage in ("prep", "train", "load"):
        hero = res["stages"][stage].get("hero") if "stages" in res else None
        hero = hero or result.load(folder).stage(stage).doc.get("hero")
        command = hero["text"].partition("; run: ")[2]
        assert f"fio, to pair the {stage} stage with: {command}" in out.splitlines(), out
