"""`aiio size`: how many accelerators, how much storage, how fast, and can the measured storage
feed them. Parses options, calls aiio.sizing, prints tables (or JSON)."""

from __future__ import annotations

import click

from aiio import sizing
from aiio.cli.common import emit_json
from aiio.errors import ConfigError
from aiio.units import parse_count, parse_duration, parse_size

SECTION_TITLES = {
    "inputs": "Inputs",
    "memory": "Memory per model replica (training)",
    "compute": "Compute",
    "storage": "Storage",
    "measured": "Against measurements (--from)",
}


def parse_fraction(text: str, option: str) -> float:
    """0.05 or '5%' -> 0.05."""
    raw = text.strip()
    try:
        return float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise ConfigError(f"{option}: cannot read {text!r} as a fraction (e.g. 0.05 or 5%)") \
            from None


def _parsed(parse, text: str | None, option: str) -> float | None:
    """None when not given; a negative value gets a message that says so."""
    if text is None:
        return None
    if text.strip().startswith("-"):
        raise ConfigError(f"{option} = {text} must not be negative")
    return parse(text)


@click.command("size")
@click.option("--model", "-m", metavar="NAME", help="model preset, e.g. llama3-70b")
@click.option("--workload", "-w", metavar="NAME",
              help="training workload, e.g. unet3d (a name in workloads/ or a TOML path)")
@click.option("--accelerator", "-a", metavar="NAME",
              help="a100, h100, h200, b200, mi300x  [default: the workload's]")
@click.option("--parameters", metavar="COUNT", help="parameter count, e.g. 70B (overrides)")
@click.option("--tokens", metavar="COUNT", help="training tokens for a model, e.g. 2T")
@click.option("--days", type=float, help="time budget for training, in days")
@click.option("--gpus", type=int, help="accelerators you have or plan")
@click.option("--mfu", metavar="FRACTION",
              help=f"model FLOPs utilization, e.g. 0.4 or 40%  [default: {sizing.DEFAULT_MFU}]")
@click.option("--epochs", type=int, help="passes over the dataset  [default: the workload's]")
@click.option("--precision", type=click.Choice(sorted(sizing.PRECISIONS)), default="bf16",
              show_default=True, help="training precision (bf16 keeps an fp32 master copy)")
@click.option("--optimizer", type=click.Choice(sorted(sizing.OPTIMIZERS)), default="adam",
              show_default=True)
@click.option("--bytes-per-token", type=float, default=sizing.DEFAULT_BYTES_PER_TOKEN,
              show_default=True, help="dataset bytes per token")
@click.option("--dataset-size", metavar="SIZE", help="dataset capacity, e.g. 40TiB (overrides)")
@click.option("--prep-copies", type=float, default=1.0, show_default=True,
              help="prep output, in dataset sizes")
@click.option("--retention", type=int, default=sizing.DEFAULT_RETENTION, show_default=True,
              help="checkpoints kept")
@click.option("--checkpoint-interval", default="1h", show_default=True, metavar="DURATION")
@click.option("--stall-budget", default="5%", show_default=True, metavar="FRACTION",
              help="largest share of training time spent writing checkpoints")
@click.option("--replicas", type=int, default=sizing.DEFAULT_REPLICAS, show_default=True,
              help="inference replicas loading the model at once")
@click.option("--load-time", default="60s", show_default=True, metavar="DURATION",
              help="time for every replica to load the weights")
@click.option("--from", "results", multiple=True, metavar="PATH",
              help="a train or checkpoint result.json, or its folder; repeatable")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of tables")
def size(**kw) -> None:
    """Size accelerators and storage for a model or workload, and check measured storage."""
    as_json = kw.pop("as_json")
    result = sizing.size(_inputs(kw))
    if as_json:
        emit_json(result.to_dict())
    else:
        _print(result)


def _inputs(kw: dict) -> sizing.SizingInputs:
    """Options -> SizingInputs, parsing counts, sizes, durations and fractions."""
    mfu = kw.pop("mfu")
    return sizing.SizingInputs(
        parameters=_parsed(parse_count, kw.pop("parameters"), "--parameters"),
        tokens=_parsed(parse_count, kw.pop("tokens"), "--tokens"),
        dataset_size=_parsed(parse_size, kw.pop("dataset_size"), "--dataset-size"),
        checkpoint_interval=_parsed(parse_duration, kw.pop("checkpoint_interval"),
                                    "--checkpoint-interval"),
        load_time=_parsed(parse_duration, kw.pop("load_time"), "--load-time"),
        stall_budget=parse_fraction(kw.pop("stall_budget"), "--stall-budget"),
        mfu=None if mfu is None else parse_fraction(mfu, "--mfu"),
        results=tuple(kw.pop("results")),
        **kw,
    )


def _print(result: sizing.Sizing) -> None:
    from rich.table import Table

    from aiio.term.screen import out_console

    console = out_console()
    console.print(f"[bold]{result.title}[/bold]")
    for name, rows in result.sections.items():
        if not rows:
            continue
        table = Table(title=SECTION_TITLES[name], title_justify="left", show_edge=False)
        table.add_column("quantity")
        table.add_column("value", justify="right")
        table.add_column("unit")
        table.add_column("how", style="dim", overflow="fold")
        for row in rows:
            table.add_row(row.label, _value(row.value, row.unit), row.unit, row.formula)
        console.print()
        console.print(table)
    if result.verdict:
        console.print()
        for line in result.verdict:
            console.print(f"[bold]=>[/bold] {line}", highlight=False)
    for line in result.notes:
        console.print(f"[yellow]note:[/yellow] {line}", highlight=False)


def _value(value: object, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit in ("parameters", "tokens") and isinstance(value, (int, float)):
        return sizing.fmt_count(value)
    if isinstance(value, (int, float)):
        return sizing.fmt(value)
    return str(value)
