"""The oracle lab: filesystems whose bandwidth is known, to test aiio's figures against truth."""
