"""Whether a pip extra's packages are installed, without importing them.

``vidmem list`` and ``vidmem doctor`` show a backend or generator whose extra is
missing as "needs the models extra" rather than "available": most backend modules
import torch or onnxruntime only when a model is built, so importing the module
proves nothing.
"""

from __future__ import annotations

import importlib.util

__all__ = ["EXTRA_MODULES", "availability", "install_line", "missing_modules"]

#: extra -> the top-level modules it must bring (pyproject.toml's optional-dependencies)
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "models": ("torch", "transformers", "safetensors"),
    "faces": ("onnxruntime",),
    "diffusers": ("diffusers", "accelerate", "torch", "transformers"),
    "ray": ("ray",),
}


def _installed(module: str) -> bool:
    """Whether ``module`` can be found (a spec, not an import: torch takes seconds)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_modules(extra: str | None) -> tuple[str, ...]:
    """The modules of ``extra`` that are not installed (``()`` for core or unknown)."""
    return tuple(m for m in EXTRA_MODULES.get(extra or "", ()) if not _installed(m))


def install_line(extra: str) -> str:
    """The pip command that installs ``extra``.

    Example:
        >>> install_line("faces")
        "pip install 'vidmem[faces]'"
    """
    return f"pip install 'vidmem[{extra}]'"


def availability(status: str, extra: str | None) -> str:
    """What ``vidmem list`` shows for a registered name: ``planned``, ``available``, or
    ``needs the <extra> extra`` when a module of its extra is missing."""
    if status != "available":
        return status
    return f"needs the {extra} extra" if missing_modules(extra) else "available"
