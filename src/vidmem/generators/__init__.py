"""The Generator protocol and its adapters (shell command, module:Class plugin, sim)."""
