"""The repository's own reference documents hold what the code cites.

Code comments, docstrings and the README cite numbered sections of ``docs/``
(``docs/protocol.md §4.2``, ``docs/store.md §2.1, §8``); the documents cite each other the
same way without the ``docs/`` prefix, and themselves with a bare section sign and number.
Every cited number must be the number of a heading of that document, every section sign in
the code must belong to such a citation, and nothing may point at a reference document
outside the repository, which a clone does not have.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CODE_ROOTS = (
    "common",
    "namesrv",
    "broker",
    "client",
    "bench",
    "operator",
    "launcher",
    "tests",
    "tools",
)
CODE_SUFFIXES = frozenset({".py", ".pyx", ".pxi"})
TEXT_SUFFIXES = CODE_SUFFIXES | {".md", ".toml", ".cfg", ".ini", ".txt", ".yaml", ".yml"}
SKIPPED_DIRS = frozenset(
    {".git", ".venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache",
     ".pytest_cache", "build", "dist", ".data"}
)  # fmt: skip

SECTION = r"\u00a7\d+(?:\.\d+)*"
SECTIONS = rf"(?:,?\s*{SECTION})+"
#: A document and the sections cited from it, as in this module's docstring.
CODE_CITATION = re.compile(rf"docs/(?P<doc>[a-z_]+)\.md(?P<sections>{SECTIONS})")
#: In a document: sections of another document (its name first) or of itself (bare).
DOC_CITATION = re.compile(rf"(?:(?P<doc>[a-z_]+)\.md)?(?P<sections>{SECTIONS})")
HEADING = re.compile(r"^#{2,6}\s+(?P<number>\d+(?:\.\d+)*)\.?\s", re.M)
#: The outside documents the code used to cite (spelled in parts so this file holds none).
OUTSIDE_DOCUMENTS = tuple(
    part + suffix
    for part, suffix in (
        ("remoting", "-protocol.md"),
        ("client", "-quirks.md"),
        ("performance", "-notes.md"),
        ("../", "shared/"),
    )
)


def _walk(top: Path, suffixes: frozenset[str]) -> Iterator[Path]:
    for path in sorted(top.iterdir()):
        if path.is_dir():
            if path.name not in SKIPPED_DIRS:
                yield from _walk(path, suffixes)
        elif path.suffix in suffixes or path.name == "Makefile":
            yield path


def code_files() -> list[Path]:
    """The files whose citations are checked: the code, the tests and the README."""
    code = [path for root in CODE_ROOTS for path in _walk(ROOT / root, CODE_SUFFIXES)]
    return [*code, ROOT / "README.md"]


def headings(doc: str) -> set[str]:
    """The section numbers of ``docs/<doc>.md``'s headings."""
    return set(HEADING.findall((DOCS / f"{doc}.md").read_text()))


def code_citations() -> list[tuple[str, str, str]]:
    """(file, document, section) of every citation of ``docs/`` in the code."""
    found = []
    for path in code_files():
        text = path.read_text()
        for match in CODE_CITATION.finditer(text):
            for section in re.findall(SECTION, match["sections"]):
                found.append((str(path.relative_to(ROOT)), match["doc"], section[1:]))
    return found


def test_the_code_cites_the_documents() -> None:
    """Guards the scan itself: the code does cite both documents."""
    cited = {doc for _, doc, _ in code_citations()}
    assert {"protocol", "store"} <= cited


def test_every_section_the_code_cites_exists() -> None:
    missing = []
    for where, doc, section in code_citations():
        if not (DOCS / f"{doc}.md").is_file():
            missing.append(f"{where}: docs/{doc}.md does not exist")
        elif section not in headings(doc):
            missing.append(f"{where}: docs/{doc}.md has no section {section}")
    assert not missing, "\n".join(missing)


def test_every_section_sign_in_the_code_belongs_to_a_citation() -> None:
    """A bare section number would say nothing about which document it means."""
    stray = []
    for path in code_files():
        text = path.read_text()
        cited = sum(len(re.findall(SECTION, m["sections"])) for m in CODE_CITATION.finditer(text))
        if text.count("\u00a7") != cited:
            stray.append(str(path.relative_to(ROOT)))
    assert not stray, f"a section sign outside a docs/<file>.md citation in: {stray}"


@pytest.mark.parametrize("doc", sorted(path.stem for path in DOCS.glob("*.md")))
def test_the_documents_cite_sections_that_exist(doc: str) -> None:
    missing = []
    for match in DOC_CITATION.finditer((DOCS / f"{doc}.md").read_text()):
        target = match["doc"] or doc
        if not (DOCS / f"{target}.md").is_file():
            continue  # not one of ours: another file named *.md
        for section in re.findall(SECTION, match["sections"]):
            if section[1:] not in headings(target):
                missing.append(f"{target}.md {section}")
    assert not missing, f"{doc}.md cites sections that do not exist: {missing}"


@pytest.mark.parametrize("doc", sorted(path.stem for path in DOCS.glob("*.md")))
def test_section_numbers_are_unique(doc: str) -> None:
    numbers = HEADING.findall((DOCS / f"{doc}.md").read_text())
    assert len(numbers) == len(set(numbers))


def test_nothing_cites_a_document_outside_the_repository() -> None:
    citing = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in _walk(ROOT, TEXT_SUFFIXES)
        for name in OUTSIDE_DOCUMENTS
        if name in path.read_text(errors="replace")
    ]
    assert not citing, "\n".join(citing)
