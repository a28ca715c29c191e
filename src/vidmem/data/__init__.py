"""Frozen records (Case, Request, Response, Score) and one loader/scorer module per benchmark."""
