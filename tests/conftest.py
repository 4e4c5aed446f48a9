"""Shared fixtures. One real local Spark session (local[2]) for the whole run, created on first use."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    from sink.session import local_session

    session = local_session("seglog-tests", with_delta=True)
    try:
        import sink  # registers the seglog data source with this session
        sink.register(session)
    except (ImportError, AttributeError):
        pass
    yield session
    session.stop()
