"""The offline reference world: procedural cases and videos with a truth sidecar."""
