"""Set-up shared by the serve tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.postgres_cluster import Unavailable, cluster


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """A throwaway PostgreSQL cluster for the session (`postgres_cluster`); its URL."""
    try:
        with cluster() as url:
            yield url
    except Unavailable as why:
        pytest.skip(f"PostgreSQL cannot be started here: {why}")
