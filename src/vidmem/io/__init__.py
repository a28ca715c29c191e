"""Input/output: video decode/encode, boxes, JSONL and content hashing."""
