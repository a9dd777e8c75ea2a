"""aiio: a storage I/O profiler for AI infrastructure."""

__version__ = "0.1.0"
