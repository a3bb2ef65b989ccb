"""What a pack author reads agrees with itself and with what runs: the tutorial's files, laid out
as it says and installed, are the pack it describes; the SDK's guide, the README and the
scaffold register packs the same way and say when a running worker needs a restart; the
scaffold's README installs what its tests need before it runs them."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import requires
from pathlib import Path

import pytest

import agentledger.sdk
from agentledger.app import registry
from agentledger.cli.scaffold import scaffold_pack

ROOT = Path(__file__).parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"
README = ROOT / "README.md"
ENTRY_POINTS = f'[project.entry-points."{registry.ENTRY_POINT_GROUP}"]'
RESTART = re.compile(r"restart\w* (?:the|a|its|your) (?:running )?worker", re.I)
PIP_INSTALL = ("-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-q")


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.S | re.M)


def layout(text: str) -> list[str]:
    """The paths the tutorial's layout block lists (a tree indented by two spaces)."""
    (tree,) = [b for b in blocks(text, "text") if "pyproject.toml" in b]
    paths, parents = [], []
    for line in tree.splitlines():
        name = line.split("#")[0].strip()
        depth = (len(line) - len(line.lstrip())) // 2
        parents = [*parents[:depth], name]
        paths.append("".join(parents))
    return paths


@pytest.fixture
def installed_tutorial(tmp_path: Path) -> Iterator[Path]:
    """The tutorial's files written where its layout says, installed offline into a site
    directory on the path, and the installed packs read again."""
    text = TUTORIAL.read_text()
    files = layout(text)
    root = tmp_path / files[0]
    module = tmp_path / next(f for f in files if f.endswith("/__init__.py"))
    module.parent.mkdir(parents=True)
    module.write_text("\n\n".join(blocks(text, "python")))
    (tmp_path / next(f for f in files if f.endswith("/pyproject.toml"))).write_text(
        blocks(text, "toml")[0]
    )
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, *PIP_INSTALL, "--target", str(site), str(root)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    sys.path.insert(0, str(site))
    registry.rediscover()
    yield root
    sys.path.remove(str(site))
    sys.modules.pop(module.parent.name, None)
    registry.rediscover()


def test_the_tutorials_files_laid_out_as_it_says_install_the_pack_it_describes(
    installed_tutorial: Path,
) -> None:
    project = tomllib.loads((installed_tutorial / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["agentledger.packs"] == {
        "giftcards": "giftcards_pack:PACK"
    }
    assert "pytest" in " ".join(project["project"]["optional-dependencies"]["test"])
    source = next(s for s in registry.pack_sources() if s.name == "giftcards")
    assert (source.origin, source.distribution) == ("entry point", "agentledger-giftcards")
    assert registry.get_pack("giftcards").name == "giftcards"


def test_the_sdk_guide_the_readme_and_the_scaffold_register_packs_by_entry_point() -> None:
    guide = agentledger.sdk.__doc__ or ""
    first = guide.split("\n\n")[1]  # the paragraph that says how a pack is registered
    assert ENTRY_POINTS in first.replace("\n", " ")
    assert "AGENTLEDGER_PACKS" not in first or "ad hoc" in first
    assert ENTRY_POINTS in README.read_text()
    scaffold = Path(agentledger.cli.scaffold.__file__).parent / "templates" / "pyproject.toml.tmpl"
    assert ENTRY_POINTS in scaffold.read_text()


@pytest.mark.parametrize("where", ["guide", "README.md", "tutorial", "scaffold README"])
def test_the_docs_say_a_running_worker_must_be_restarted_for_a_new_pack(where: str) -> None:
    text = {
        "guide": agentledger.sdk.__doc__ or "",
        "README.md": README.read_text(),
        "tutorial": TUTORIAL.read_text(),
        "scaffold README": (
            Path(agentledger.cli.scaffold.__file__).parent / "templates" / "README.md.tmpl"
        ).read_text(),
    }[where]
    assert RESTART.search(text.replace("\n", " ")), where


def test_the_scaffolds_readme_installs_its_test_extra_before_it_runs_its_tests(
    tmp_path: Path,
) -> None:
    pack = scaffold_pack("acme-docs", tmp_path / "acme-docs")
    (commands,) = blocks((pack / "README.md").read_text(), "bash")
    lines = [line.split("#")[0].strip() for line in commands.splitlines()]
    install = next(i for i, line in enumerate(lines) if line.startswith("pip install"))
    run_tests = next(i for i, line in enumerate(lines) if line.startswith("pytest"))
    assert install < run_tests and "[test]" in lines[install], lines[install]
    extra = tomllib.loads((pack / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["test"]
    provided = {_dist(r) for r in [*extra, *(requires("agentledger") or [])] if "extra ==" not in r}
    imported = {
        name
        for test in (pack / "tests").glob("*.py")
        for name in re.findall(r"^(?:from|import) (\w+)", test.read_text(), re.M)
    }
    third_party = imported - set(sys.stdlib_module_names) - {"acme_docs_pack", "__future__"}
    assert third_party - {"agentledger"} <= provided, third_party - provided


def _dist(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower().replace("-", "_")
