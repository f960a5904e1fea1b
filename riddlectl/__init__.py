"""riddlectl: a batch runner for multi-agent riddle solving over a crash-safe spool."""

__version__ = "0.1.0"
