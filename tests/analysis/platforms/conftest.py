"""A real Phoenix server for the platform tests: one per test session, on 127.0.0.1.

Phoenix (``arize-phoenix``, in the ``test`` extra) is started as a subprocess with a
temporary working directory (its SQLite database), free HTTP and gRPC ports and telemetry
off; it needs no network. Starting it takes about half a minute on this 2-core machine, so
the whole session shares one server and each test uses its own project.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def require(module: str) -> None:
    """Skip without Phoenix (it is not in the test extra, see pyproject.toml), but fail
    where CI installed it for these tests (MAST_REQUIRE_PHOENIX, set by .ci/run)."""
    try:
        __import__(module)
    except ImportError as exc:
        if os.environ.get("MAST_REQUIRE_PHOENIX"):
            pytest.fail(f"{module} is required here (MAST_REQUIRE_PHOENIX): {exc}")
        pytest.skip(f"{module} not installed: pip install -e '.[test,phoenix-test]'")


class PhoenixServer:
    def __init__(self, url: str, log: Path) -> None:
        self.url = url
        self.log = log


@pytest.fixture(scope="session")
def phoenix_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PhoenixServer]:
    require("phoenix.server.main")
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = work / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "phoenix.server.main", "serve"],
            env=env,
            cwd=work,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300  # a loaded 2-core machine: generous, never asserted
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"Phoenix exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"Phoenix did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield PhoenixServer(url, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
