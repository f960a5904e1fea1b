"""Storage of riddles in queues: the spool contract, its states and routing, the in-memory
twin; `fs/` is the filesystem implementation.
"""
