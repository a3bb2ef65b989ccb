"""Observing the runtime: metrics derived from the ledger, traces and structured logs."""
