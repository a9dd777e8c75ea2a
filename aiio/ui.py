"""What runs, sweeps, the fio suite and acceptance tell the person watching: the UI protocol,
and QuietUI, which shows nothing (library calls and tests); the terminal's is term.RichUI."""

from __future__ import annotations

from typing import Any, Protocol


class UI(Protocol):
    def note(self, message: str) -> None:
        """One line for the person watching (stderr on a terminal)."""

    def alert(self, message: str) -> None:
        """One line the person watching must see even with no progress shown (--quiet): why
        the run cannot end yet."""

    def progress(self, label: str, done: int, total: int) -> None:
        """Progress of a preparation step (dataset generation, laying out files)."""

    def start(self, label: str, total: int | None, clients: int, *,
              compute_s: float | None = None, hero: dict[str, Any] | None = None) -> None:
        """A measured run begins: total units (None when time-based) over `clients` clients;
        compute_s (training) gives live AU, hero the fio figure to hold the aggregate against."""

    def tick(self, nbytes: list[int], units: list[int], elapsed: float) -> None:
        """The clients' live counters, `elapsed` seconds after their common start."""

    def stop(self) -> None:
        """The measured run ended."""


class QuietUI:
    """Shows nothing."""

    def note(self, message: str) -> None:
        pass

    def alert(self, message: str) -> None:
        pass

    def progress(self, label: str, done: int, total: int) -> None:
        pass

    def start(self, label: str, total: int | None, clients: int, *,
              compute_s: float | None = None, hero: dict[str, Any] | None = None) -> None:
        pass

    def tick(self, nbytes: list[int], units: list[int], elapsed: float) -> None:
        pass

    def stop(self) -> None:
        pass
