"""Test storage of known behaviour (root only): built in tools/storage.py, which the bench
uses too; the test modules import it from here."""

from tools.storage import ThrottledDisk, can_build_storage, small_tmpfs, throttled_disk

__all__ = ["ThrottledDisk", "can_build_storage", "small_tmpfs", "throttled_disk"]
