"""The filesystem spool: one directory per queue, flock claims, atomic writes, inotify wake-
ups, the event log and the extraction cache.
"""
