"""The answer of `aiio size`: rows per section (label, value, unit, formula), verdict
sentences and notes. The CLI renders them as tables or JSON."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

SIZING_SCHEMA = "aiio.sizing/1"


@dataclass
class Row:
    """One line of a table: a named quantity, its value and unit, and how it was computed."""

    key: str
    label: str
    value: Any
    unit: str = ""
    formula: str = ""


SECTIONS = ("inputs", "memory", "compute", "storage", "measured")


@dataclass
class Sizing:
    """The answer: rows per section, verdict sentences and notes."""

    title: str
    sections: dict[str, list[Row]] = field(default_factory=lambda: {s: [] for s in SECTIONS})
    verdict: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, title: str, parts: list[Part]) -> Sizing:
        """The answer from its sections' parts, in order."""
        out = cls(title)
        for part in parts:
            out.sections[part.section].extend(part.rows)
            out.verdict.extend(part.verdict)
            out.notes.extend(part.notes)
        return out

    def value(self, key: str) -> Any:
        """A row's value by key (KeyError if absent)."""
        for rows in self.sections.values():
            for row in rows:
                if row.key == key:
                    return row.value
        raise KeyError(key)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SIZING_SCHEMA,
            "title": self.title,
            "values": {r.key: r.value for rows in self.sections.values() for r in rows},
            "sections": {name: [dataclasses.asdict(r) for r in rows]
                         for name, rows in self.sections.items() if rows},
            "verdict": self.verdict,
            "notes": self.notes,
        }


@dataclass
class Part:
    """One section's share of the answer: its rows, and the verdict sentences and notes it
    adds, in the order they were found."""

    section: str
    rows: list[Row] = field(default_factory=list)
    verdict: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, key: str, label: str, value: Any, unit: str = "", formula: str = "") -> Any:
        self.rows.append(Row(key, label, value, unit, formula))
        return value

    def value(self, key: str) -> Any:
        """A row's value by key (KeyError if absent)."""
        for row in self.rows:
            if row.key == key:
                return row.value
        raise KeyError(key)
