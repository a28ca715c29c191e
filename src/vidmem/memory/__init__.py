"""The causal memory store, retrieval policies and the guard that drops future evidence."""
