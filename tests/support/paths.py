"""Where the repository's files are, for every test and helper."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
DATA = ROOT / "data"
#: The hostile corpus (`tests/corpus/make_corpus.py` writes it).
CORPUS = TESTS / "corpus"
