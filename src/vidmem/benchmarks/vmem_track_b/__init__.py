"""The vmem_track_b benchmark."""
