"""Make the agent test fakes importable by name (``import agent_fakes``), also from the
``module:Class`` and ``module:function`` specs the CLI tests hand to ``vidmem agent m3``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from agent_fakes import ChatServer  # noqa: E402


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch):
    """No proxies and no judge or rewriter settings from the developer's shell."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy", "VIDMEM_JUDGE_URL", "OPENAI_BASE_URL", "VIDMEM_JUDGE_MODEL",
                 "VIDMEM_JUDGE_API_KEY", "OPENAI_API_KEY", "VIDMEM_REWRITER_URL",
                 "VIDMEM_REWRITER_MODEL", "VIDMEM_REWRITER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def judge_server():
    server = ChatServer()
    yield server
    server.close()


@pytest.fixture
def rewriter_server():
    server = ChatServer()
    yield server
    server.close()
