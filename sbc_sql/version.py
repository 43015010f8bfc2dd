"""The package's version, in a module of its own: everything that records or prints it
(provenance, install-sql's mark, ``--version``) reads it here without importing the
package's public API."""

__version__ = "0.1.0"


def version_line() -> str:
    """What ``sbc-sql --version`` prints."""
    return f"sbc-sql {__version__}"
