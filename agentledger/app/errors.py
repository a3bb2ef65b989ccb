"""Errors the application shell reports to people: one line, what went wrong, what to do.

AgentLedgerError
 ├── ConfigError          a flag or environment variable is invalid
 │    └── EvalInputInvalid an eval suite or configuration file that cannot run (unknown
 │                         pack, tool, fixture or user; unreadable or mistyped file)
 ├── ServerUnavailable    the Temporal server cannot be reached or started
 │    └── ConnectionRefused  it answered, but the secure connection was refused (its
 │                         certificate, its name, or this client's certificate); ``reason``
 ├── DatabaseUnavailable  the ledger database cannot be reached
 ├── NotFound             an unknown run, approval or principal
 │    └── SuiteNotFound    an eval suite that is neither shipped nor a file
 ├── Refused              the runtime refused the request (e.g. an approval by the requester)
 ├── RunStuck             a run keeps failing the same activity (a model endpoint that is down)
 ├── StillRunning         a run did not reach what was waited for in time (it goes on)
 └── ConfigurationsIdentical  two eval configurations that would freeze the same manifest
"""

from __future__ import annotations


def in_words(exc: BaseException) -> str:
    """An exception's message for people: bytes that are not UTF-8 said as such, with where,
    instead of the codec's own text ("'utf-8' codec can't decode byte ...")."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
    return str(exc)


class AgentLedgerError(Exception):
    """Base of every error the CLI prints without a traceback (``--debug`` shows one)."""

    exit_code = 1


class ConfigError(AgentLedgerError):
    exit_code = 2


class ServerUnavailable(AgentLedgerError):
    exit_code = 3


class ConnectionRefused(ServerUnavailable):
    """The frontend answered and TLS (or its gateway) refused: retrying cannot help."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason
        """``server_certificate_untrusted``, ``server_certificate_expired``,
        ``server_name_mismatch``, ``client_certificate_refused`` or ``tls_mismatch``."""


class DatabaseUnavailable(AgentLedgerError):
    exit_code = 3


class NotFound(AgentLedgerError):
    exit_code = 4


class Refused(AgentLedgerError):
    exit_code = 5

    def __init__(self, message: str, reason_code: str | None = None) -> None:
        super().__init__(message)
        self.reason_code = reason_code
        """The refusal's type as the run gave it (``requester_cannot_approve``, …), if any."""


class RunStuck(AgentLedgerError):
    exit_code = 6


class StillRunning(AgentLedgerError):
    exit_code = 8


class EvalInputInvalid(ConfigError):
    """Exit 2, like every input that cannot be used as given; ``code`` names which kind."""

    def __init__(self, message: str, code: str = "eval_input_invalid") -> None:
        super().__init__(message)
        self.code = code


class SuiteNotFound(NotFound):
    pass


class ConfigurationsIdentical(AgentLedgerError):
    """Exit 7: the comparison asked for is empty (nothing between the two manifests differs)."""

    exit_code = 7
