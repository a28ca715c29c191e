"""Tests for vidmem.runners (a package, so test file names may repeat in other folders)."""
