"""vidmem: measure memory in long-video generators and video world models."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("vidmem")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
