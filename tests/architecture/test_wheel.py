"""The built wheel installs one import root, ``agentledger``, with its package data inside."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


# Offline: setuptools and wheel come from the environment, nothing from an index.
PIP_WHEEL = ("-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, *PIP_WHEEL, "-w", str(out), str(ROOT)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("agentledger-*.whl")
    return zipfile.ZipFile(built)


def test_the_wheel_installs_only_the_agentledger_package(wheel: zipfile.ZipFile) -> None:
    tops = {name.split("/")[0] for name in wheel.namelist()}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert len(dist_info) == 1
    assert tops - dist_info == {"agentledger"}
    (info,) = dist_info
    assert wheel.read(f"{info}/top_level.txt").decode().split() == ["agentledger"]


def test_the_wheel_carries_its_package_data(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    assert "agentledger/activities/ledger/migrations/script.py.mako" in names
    assert any(
        n.startswith("agentledger/packs/support/policies/") and n.endswith(".md") for n in names
    )
    assert "agentledger/packs/tau2/__init__.py" in names
    assert {"agentledger/api/templates/inbox.html", "agentledger/api/static/app.js"} <= set(names)
    source_json = {str(p.relative_to(ROOT)) for p in (ROOT / "agentledger").rglob("*.json")}
    assert source_json <= set(names)
