"""agentledger: a governed, event-sourced runtime for AI-agent runs as durable Temporal workflows.

This docstring is the map. The package root holds only it and ``py.typed``; every module lives in
one of these rooms (``tests/architecture/test_package_root.py`` holds that).

Layers, top down (each room may import the rooms to the right of its arrow, and no other)::

    cli/         ──▶ api/, evaluation/, app/, workflows/ (check-replay), activities/, domain/
    api/         ──▶ app/, activities/, domain/
    evaluation/  ──▶ app/, packs/, activities/, domain/
    app/         ──▶ workflows/, activities/, packs/, domain/
    packs/       ──▶ sdk/, activities/, domain/
    sdk/         ──▶ activities/, domain/
    workflows/   ──▶ activities/ (references and messages only), domain/
    activities/  ──▶ domain/
    domain/      ──▶ the standard library, pydantic, the tokenizer

``domain/``      pure and deterministic: events, the fold, deciders that return the events to
                 record, context builder, governance, manifest, memory rules. No I/O, no clock.
``workflows/``   Temporal orchestration only; records what the domain returns. Patch ids:
                 ``workflows/_patches.py``.
``activities/``  every side effect: the ledger, tools, model providers, MCP, retrieval, memory.
``sdk/``         the public pack API: what a pack author imports.
``packs/``       built-in packs.
``app/``         the application layer both faces share: ``runtime`` (the composition root),
                 ``config``, ``errors``, ``registry``, ``runs`` (start, wait, decide, reply),
                 ``identity``, ``temporal`` (the connection), ``devserver``/``own_server``,
                 ``stack`` (start the embedded stack, open the runtime or ledger), ``render``,
                 ``observability``. Returns values; never prints.
``evaluation/``  ``agentledger eval`` as a feature over ``app/``: suites, configurations, report.
``api/``         the HTTP face: ``main`` (the ASGI factory), ``routes/`` (one router per
                 resource), ``deps`` (the request's caller and context), auth, the web UI.
``cli/``         the command-line face: ``main`` parses and dispatches, one module per command
                 group (``stack``, ``runs``, ``show``, ``packs``, ``deploy``, ``docs``, ``token``,
                 ``demo``, ``eval``, ``serve``, ``replay``, ``scaffold``). The only room that
                 prints.

Never (``tests/architecture/layers.json``, walked transitively by ``test_layers.py``): ``api/``,
``app/`` or ``evaluation/`` importing ``cli/``; ``app/`` importing ``api/`` or ``evaluation/``;
the core (``domain``, ``workflows``, ``activities``, ``sdk``, ``packs``) importing any face or
``app/``.

Where a change goes:

- a new command: its group's module in ``cli/`` (a parser in ``cli/main.py``, a target in its
  ``_COMMANDS``); the work it does, if the API or eval could want it too, in ``app/``;
- a new endpoint: a router in ``api/routes/`` over ``app/`` services;
- a new rule or event: ``domain/``, decided there and recorded by ``workflows/``;
- a workflow behaviour change: behind a new id in ``workflows/_patches.py`` with a recorded
  history in ``tests/replay/histories/``;
- a new side effect: an activity in ``activities/``;
- a new tool or pack: ``packs/`` (or your own package) with ``agentledger.sdk``.
"""
