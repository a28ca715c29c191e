"""The built-in Track-A retrieval policies, one module each (see vidmem.memory.policy)."""
