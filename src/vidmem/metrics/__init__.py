"""Pure metric functions: arrays and records in, numbers out; no I/O, no models."""
