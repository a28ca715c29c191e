"""Loops that drive generators, such as the M3-Agent diagnose-and-rewrite loop."""
