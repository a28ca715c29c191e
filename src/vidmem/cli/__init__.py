"""The `vidmem` command line. See :mod:`vidmem.cli.app` for the commands."""

from vidmem.cli.app import app, main

__all__ = ["app", "main"]
