"""Judge prompts as data: the loader of ``prompts/<name>.toml`` files, for benchmarks.

The loader itself is :mod:`vidmem.models.prompt_files` (agents, which sit below the
benchmarks, load their prompts with it too); this module keeps the benchmarks' import
path. See there for the file format and the rules.
"""

from __future__ import annotations

from vidmem.models.prompt_files import PromptTemplate, _Present, load_prompt

# _Present: the answer model of the loader's own example, which tests name from here
__all__ = ["PromptTemplate", "_Present", "load_prompt"]
