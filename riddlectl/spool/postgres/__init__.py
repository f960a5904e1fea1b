"""The PostgreSQL spool: one schema of a database holds every queue, claim, event and
extraction, so that agents on many hosts share one spool (see docs/postgresql.md).

Only `riddlectl.spool.open_spool` imports it; psycopg is imported only here.
"""
