"""The library side of the commands that act on a spool: submit, admin (retry, hold, release,
cancel, purge), doctor, report.
"""
