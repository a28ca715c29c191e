"""Backend implementations, one module per model family."""
