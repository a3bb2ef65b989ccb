"""Packs found through the ``agentledger.packs`` entry points of installed distributions: one
that loads, and every way one can be broken without taking the others down."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentledger.app import registry
from agentledger.app.config import Settings
from agentledger.app.errors import ConfigError
from agentledger.app.registry import PackLoadError, UnknownPack, get_pack, pack_sources
from agentledger.cli._common import open_runtime
from agentledger.packs.support import PACK as SUPPORT

GOOD = """
from dataclasses import replace
from agentledger.packs.support import PACK as _SUPPORT
PACK = replace(_SUPPORT, name="{name}")
"""


def write_dist(site: Path, dist: str, version: str, points: dict[str, str]) -> None:
    """A distribution as pip leaves it in site-packages: its dist-info with entry points."""
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = "".join(f"{name} = {target}\n" for name, target in points.items())
    (info / "entry_points.txt").write_text(f"[agentledger.packs]\n{lines}")


def write_module(site: Path, module: str, source: str) -> None:
    (site / f"{module}.py").write_text(textwrap.dedent(source))


def populate(site: Path) -> None:
    """One good pack and one of each kind of broken one, under unique module names."""
    write_module(site, "acme_ok_pkg", GOOD.format(name="acme_ok"))
    write_module(site, "acme_misnamed_pkg", GOOD.format(name="somebody_else"))
    write_module(site, "acme_raises_pkg", "import no_such_module_anywhere\n")
    write_module(site, "acme_number_pkg", "PACK = 42\n")
    write_dist(site, "acme-ok", "1.2.3", {"acme_ok": "acme_ok_pkg:PACK"})
    write_dist(site, "acme-raises", "0.1", {"acme_raises": "acme_raises_pkg:PACK"})
    write_dist(site, "acme-number", "0.2", {"acme_number": "acme_number_pkg:PACK"})
    write_dist(site, "acme-misnamed", "0.3", {"acme_misnamed": "acme_misnamed_pkg:PACK"})
    write_dist(site, "acme-missing-attr", "0.4", {"acme_noattr": "acme_ok_pkg:NOPE"})
    write_dist(site, "acme-support", "6.6", {"support": "acme_ok_pkg:PACK"})
    write_dist(site, "twin-a", "1", {"twin": "acme_ok_pkg:PACK"})
    write_dist(site, "twin-b", "2", {"twin": "acme_ok_pkg:PACK"})


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Path]:
    """A directory on sys.path holding the distributions, discovered afresh."""
    populate(tmp_path)
    sys.path.insert(0, str(tmp_path))
    registry.rediscover()
    yield tmp_path
    sys.path.remove(str(tmp_path))
    registry.rediscover()


def source(name: str) -> registry.PackSource:
    return next(s for s in pack_sources() if s.name == name)


def test_an_installed_distributions_entry_point_is_a_pack(site: Path) -> None:
    found = source("acme_ok")
    assert (found.origin, found.distribution, found.version) == ("entry point", "acme-ok", "1.2.3")
    assert get_pack("acme_ok").name == "acme_ok"
    assert get_pack("acme_ok").profile == SUPPORT.profile


@pytest.mark.parametrize(
    ("name", "cause"),
    [
        ("acme_raises", "ModuleNotFoundError: No module named 'no_such_module_anywhere'"),
        ("acme_number", "acme_number_pkg:PACK is a int, not an agentledger Pack"),
        ("acme_misnamed", "the pack calls itself 'somebody_else'"),
        ("acme_noattr", "AttributeError"),
        ("twin", "the name is also claimed by entry point of twin-"),
    ],
)
def test_a_broken_pack_is_a_typed_error_naming_it_and_the_others_still_load(
    site: Path, name: str, cause: str
) -> None:
    with pytest.raises(PackLoadError) as raised:
        get_pack(name)
    assert cause in raised.value.cause
    assert raised.value.source.name == name
    assert name in str(raised.value) and raised.value.source.target in str(raised.value)
    assert isinstance(raised.value, UnknownPack)  # activities fail the run non-retryably
    assert get_pack("acme_ok").name == "acme_ok"  # nothing half-registered, nothing poisoned
    assert name in registry.pack_names()


def test_a_broken_pack_is_not_cached_and_loads_once_fixed(site: Path) -> None:
    with pytest.raises(PackLoadError):
        get_pack("acme_number")
    sys.modules.pop("acme_number_pkg")
    write_module(site, "acme_number_pkg", GOOD.format(name="acme_number"))
    assert get_pack("acme_number").name == "acme_number"


def test_an_entry_point_cannot_take_a_built_in_packs_name(site: Path) -> None:
    assert source("support").origin == "built-in"
    assert get_pack("support") is SUPPORT
    (refused,) = [s for s in registry.refused_sources() if s.name == "support"]
    assert refused.distribution == "acme-support"
    assert refused.problem == "'support' is the name of a built-in pack"
    twins = {s.distribution for s in registry.refused_sources() if s.name == "twin"}
    assert len(twins) == 1  # the other claim is the one the lookup reports


def test_env_and_registrations_override_entry_points_in_that_order(site: Path) -> None:
    try:
        registry.register_env_packs(["acme_ok=acme_misnamed_pkg:PACK"])
        assert source("acme_ok").origin == "env"
        with pytest.raises(PackLoadError, match="calls itself"):
            get_pack("acme_ok")
        registry.register_pack("acme_ok", "acme_ok_pkg:PACK")
        assert source("acme_ok").origin == "registered"
        assert get_pack("acme_ok").name == "acme_ok"
    finally:
        registry._env.pop("acme_ok", None)
        registry._registered.pop("acme_ok", None)
        registry.get_pack.cache_clear()


@pytest.mark.parametrize(
    "entries",
    [["acme=no_colon"], ["acme"], ["=mod:attr"], ["good=m:a", "bad=nothing"]],
)
def test_a_malformed_env_entry_registers_nothing(entries: list[str]) -> None:
    before = registry.pack_names()
    with pytest.raises(ConfigError):
        registry.register_env_packs(entries)
    assert registry.pack_names() == before


def test_an_unknown_pack_lists_the_installed_ones() -> None:
    with pytest.raises(UnknownPack, match="installed: support") as raised:
        get_pack("nothing_by_that_name")
    assert not isinstance(raised.value, PackLoadError)


def test_the_runtime_opens_seeds_and_serves_the_packs_that_load_and_names_those_that_do_not(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A broken pack (a missing dependency, a missing attribute, a disputed name) is one pack down,
    not every worker, ``serve``, ``seed`` and command that opens the runtime."""
    settings = Settings(data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path}/l.db")
    runtime = open_runtime(settings)  # as every command that opens the runtime does
    try:
        assert "warning: pack 'acme_raises' (acme_raises_pkg:PACK" in capsys.readouterr().err
        broken = runtime.broken_packs
        assert {"acme_raises", "acme_noattr", "twin"} <= set(broken)
        assert "No module named 'no_such_module_anywhere'" in broken["acme_raises"]
        assert "acme_raises_pkg:PACK" in broken["acme_raises"]
        assert "support" not in broken and "acme_ok" not in broken
        assert runtime.seed() is True  # the packs that load are seeded
        assert "playbook" in runtime.models()  # and their models served
        with pytest.raises(PackLoadError, match="acme_raises"):
            runtime.pack("acme_raises")  # a run of the broken one is refused by name
        assert runtime.pack("acme_ok").name == "acme_ok"
    finally:
        runtime.ledger.engine.dispose()
