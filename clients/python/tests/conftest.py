import asyncio
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from fake_server import FakeServer  # noqa: E402


def run(coro_fn, *args, timeout=20):
    """Run an async test body (no pytest-asyncio needed)."""

    async def guarded():
        return await asyncio.wait_for(coro_fn(*args), timeout)

    return asyncio.run(guarded())


@pytest.fixture
def arun():
    return run


FAKE_STDIO = [sys.executable, os.path.join(HERE, "fake_server.py"), "--stdio"]


def fake_server():
    return FakeServer()
