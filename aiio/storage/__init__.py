"""The target (a directory or a bucket prefix), its datasets and their formats."""
