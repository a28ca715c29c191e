"""The memory_loop benchmark."""
