"""The import contracts themselves: no contract ignores an import, and every package of scheduler/ has its
place in the layers (a new one outside them would go unchecked)."""

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Outside the layers, each for its reason: Django's app config and migrations (they import none of our
# packages), and the harnesses and benchmarks, which the no-harness contract keeps away from production.
UNLAYERED = {"apps", "migrations", "testing", "bench", "chaos"}


def contracts() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(ROOT / ".importlinter")
    return parser


def test_no_contract_ignores_an_import():
    parser = contracts()
    assert [s for s in parser.sections() if parser.has_option(s, "ignore_imports")] == []


def test_every_package_of_scheduler_is_in_the_layers():
    layers = contracts()["importlinter:contract:layers"]["layers"]
    placed = {name.strip() for line in layers.split("\n") for name in line.split("|") if name.strip()}
    modules = {p.stem for p in (ROOT / "scheduler").iterdir()
               if (p.suffix == ".py" or (p / "__init__.py").exists()) and p.stem != "__init__"
               and not p.stem.startswith("test_") and p.stem != "conftest"}
    assert sorted(m for m in modules - UNLAYERED if f"scheduler.{m}" not in placed) == []
