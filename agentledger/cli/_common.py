"""What several commands share: ``say``, saying what ``app.stack`` did, and the model flags."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from pydantic import ValidationError

from agentledger.app import stack
from agentledger.app.config import Settings
from agentledger.app.errors import ConfigError
from agentledger.domain.workorder import ModelOverride, WorkOrder

if TYPE_CHECKING:
    from agentledger.app.runtime import Runtime

say = print
LOCAL_PROVIDER = "local"
LOCAL_MODEL = "gpt-4.1-mini"


def start_server(settings: Settings) -> Settings:
    """Start (or reuse) the data directory's own embedded server and say where; ``settings``
    pinned to its ports (unchanged for an explicit ``--temporal-address``)."""
    start = stack.start_server(settings)
    settings, server = start.settings, start.server
    if server is None:
        return settings
    verb = "started" if server.started else "reusing"
    say(
        f"· Temporal dev server {verb} at {server.address} (UI {server.ui_url}, data in "
        f"{settings.data_dir}/)"
    )
    if start.ports_moved:
        say(
            f"· ports {settings.temporal_port}/{settings.ui_port} (7233/8233 were taken or "
            f"set otherwise): remembered in {start.record}; every later command "
            "with this data directory uses them"
        )
    return settings


def open_runtime(settings: Settings, *, seed: bool = False) -> Runtime:
    """The runtime, saying what opening it did (a ledger created, samples seeded, a broken
    pack refused alone)."""
    opened = stack.open_runtime(settings, seed=seed)
    for problem in opened.broken_packs:  # one pack down, not the command
        print(f"warning: {problem}; its runs are refused, the other packs work", file=sys.stderr)
    if opened.created_ledger:
        say(f"· created the ledger in {settings.data_dir.resolve()}/")
    if opened.seeded:
        say("· seeded the packs' sample systems of record, directories and policies")
    return opened.runtime


def with_model(work_order: WorkOrder, args: argparse.Namespace) -> WorkOrder:
    """Name this run's model provider; the worker resolves the name (or refuses it) and the
    manifest freezes the result."""
    model = args.model or (LOCAL_PROVIDER if args.base_url else "playbook")
    if model == "playbook":
        return work_order
    choice = ModelOverride(provider=model, model=args.model_name)
    return work_order.model_copy(update={"model_override": choice})


def with_local_provider(settings: Settings, args: argparse.Namespace) -> Settings:
    """``--base-url`` on dev or demo: provider ``local`` on this process's own worker."""
    if not args.base_url:
        if args.api_key_env:
            raise ConfigError("--api-key-env names the key of --base-url's endpoint; give both")
        return settings
    entry = {"base_url": args.base_url, "models": [args.model_name or LOCAL_MODEL]}
    if args.api_key_env:
        entry["api_key_env"] = args.api_key_env
    try:
        from agentledger.activities.models import ProviderConfig

        config = ProviderConfig.model_validate(entry)
    except ValidationError as exc:
        raise ConfigError(f"--base-url/--api-key-env: {exc.errors()[0]['msg']}") from None
    say(f"· model provider {LOCAL_PROVIDER!r} on this worker: {args.base_url}")
    providers = {**settings.model_providers, LOCAL_PROVIDER: config}
    return settings.with_overrides(model_providers=providers)
