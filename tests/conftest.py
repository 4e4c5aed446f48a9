"""Shared fixtures. One real local Spark session (local[2]) for the whole run, created on first use."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    from seglog.sink.session import local_session
    from seglog.source import register

    session = local_session("seglog-tests", with_delta=True)
    register(session)  # the seglog data source, for this session
    yield session
    session.stop()
