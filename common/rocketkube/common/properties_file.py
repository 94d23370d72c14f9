"""Java ``.properties`` files, the format RocketMQ's ``-c`` config files use."""

from __future__ import annotations

from pathlib import Path


def parse_properties(text: str) -> dict[str, str]:
    """``key=value`` or ``key: value`` lines; ``#``/``!`` comments; trailing ``\\`` joins lines."""
    out: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        positions = [p for p in (line.find("="), line.find(":")) if p >= 0]
        if positions:
            cut = min(positions)
            key, value = line[:cut].strip(), line[cut + 1 :].strip()
        else:
            key, _, value = line.partition(" ")
            value = value.strip()
        if key:
            out[key] = value
    return out


def load_properties(path: str | Path) -> dict[str, str]:
    return parse_properties(Path(path).read_text(encoding="utf-8"))


def format_properties(values: dict[str, object]) -> str:
    """As Java's ``MixAll.properties2String``: one ``key=value`` line each."""
    lines = []
    for key, value in values.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"
