"""The mist benchmark."""
