"""The SQL of claims: take, give back, and reap those whose holder is gone.

A claim is a row's `holder` (the claiming process's key, see `db`) and `token` (a number
drawn for this claim alone). Every later step of the claim names the token, so a step
of a claim that was reaped meanwhile changes nothing: a late commit is refused, never
stored over what the next holder did.

The claim query is the shape the established PostgreSQL queues use: the rows are picked
in order, skipping those another transaction is claiming (`FOR UPDATE SKIP LOCKED`), in
a materialized CTE, then marked in one `UPDATE … RETURNING`. A claim returns the
riddle's stored data files too (path → SHA-256), which the agent's local copy of them
needs: no second query. From the inboxes of solve and validate, whose handlers read the
riddle's extractions, it returns the bodies of those still cached too (key → body), found
by the references in the stored document: the stage then asks no more whether they were
dropped, nor loads them (`extractions.PgExtractionCache.keep_fetched`).
"""

from __future__ import annotations

from riddlectl.spool.extractions import OWN_PATH

# The bodies of the cached extractions a claimed riddle names, for the stages that read
# them. The references are found by a pattern in the stored document as orjson writes it
# (a document is not parsed here: `jsonb` refuses the `\u0000` a question may hold). One
# missed or one too many costs a query of `dropped_of` at most, never a wrong answer. The
# document is read through `encode`, not `convert_from`: the planner looks the keys up
# by the index only from an expression that is immutable.
READS_EXTRACTIONS = ("extracted", "solved")  # the inboxes of solve and validate
EXTRACTIONS = f"""CASE WHEN r.queue IN {READS_EXTRACTIONS} THEN (
        SELECT jsonb_object_agg(e.key, convert_from(e.body, 'UTF8')) FROM extractions e
        WHERE e.key = ANY(ARRAY(
            SELECT m[1] FROM regexp_matches(
                encode(r.doc, 'escape'), '"file_extracted":"{OWN_PATH.pattern}"', 'g'
            ) AS m
        ))
    ) END"""

# With `begin_first` (`claim_and_begin`), the first riddle in the order the claims are
# handled in (`order_key`: ids by code point, as Python compares them) is marked begun as
# it is taken; a row no one holds is never begun, so without it `begun` stays false.
CLAIM = (
    """
WITH picked AS MATERIALIZED (
    SELECT id, priority, created FROM riddles
    WHERE queue = %(queue)s AND holder IS NULL AND retry_at <= %(now)s
    ORDER BY priority DESC, created, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), first AS (
    SELECT id FROM picked ORDER BY priority DESC, created, id COLLATE "C" LIMIT 1
)
UPDATE riddles r SET holder = %(holder)s, token = nextval('claim_tokens'),
    begun = %(begin_first)s AND r.id IN (SELECT id FROM first)
FROM picked WHERE r.id = picked.id
RETURNING r.id, r.queue, r.doc, r.abandoned, r.dead, r.token, r.priority, r.created,
    (SELECT jsonb_object_agg(d.path, d.sha256) FROM riddle_data d WHERE d.riddle_id = r.id),
    r.begun,
    """
    + EXTRACTIONS
    + """
"""
)

CLAIM_ID = (
    """
UPDATE riddles r SET holder = %(holder)s, token = nextval('claim_tokens')
WHERE r.id = %(id)s AND r.holder IS NULL
RETURNING r.id, r.queue, r.doc, r.abandoned, r.dead, r.token, r.priority, r.created,
    (SELECT jsonb_object_agg(d.path, d.sha256) FROM riddle_data d WHERE d.riddle_id = r.id),
    r.begun,
    """
    + EXTRACTIONS
    + """
"""
)

# The parameters of `COMMIT` (besides `tokens`), in the order of `pgspool._row`.
COMMIT_COLUMNS = (
    "ids",
    "queues",
    "docs",
    "revs",
    "priorities",
    "createds",
    "retry_ats",
    "updateds",
)
# A commit: each claimed row takes its new document and queue, and its claim ends; the
# commit's events are written and its queues' wake-ups sent, all in one statement and one
# transaction (`commit_moves`, schema step 3), whose commit waits for the disk as the
# server says. A claim found lost (its token changed) raises `CLAIM_LOST` with the ids in
# its detail, and nothing of the commit is kept.
#
# Its parameters are sent in binary (`%b`), as `storing.ADD`'s: in text, psycopg escapes an
# array element by element in Python (each quote of an event's JSON through a regular
# expression), which cost a stage more CPU than the rest of the commit.
COMMIT = """
SELECT commit_moves(
    %(ids)b::text[], %(tokens)b::bigint[], %(queues)b::text[], %(docs)b::bytea[],
    %(revs)b::int[], %(priorities)b::bigint[], %(createds)b::float8[],
    %(retry_ats)b::float8[], %(updateds)b::float8[],
    %(events)b::text[], %(at)b::float8, %(channel)b::text, %(arrived)b::text[]
)
"""
CLAIM_LOST = "RC001"  # the SQLSTATE `commit_moves` raises
# The commit of a group and `begin` of the batch's next claim, in one round trip: both or
# neither (a commit refused raises, and the statement is undone).
COMMIT_AND_BEGIN = (
    """
WITH begun AS (
    UPDATE riddles SET begun = true WHERE id = %(following)s AND token = %(following_token)s
)"""
    + COMMIT
)

RELEASE = """
UPDATE riddles SET holder = NULL, token = NULL, begun = false, abandoned = 0, dead = NULL
WHERE id = %(id)s AND token = %(token)s
"""

MARK = "UPDATE riddles SET begun = %(begun)s WHERE id = %(id)s AND token = %(token)s"
# `handled` of one claim and `begin` of the next, in one round trip.
HAND_OVER = """
UPDATE riddles SET begun = (id = %(following)s)
WHERE (id = %(done)s AND token = %(done_token)s)
   OR (id = %(following)s AND token = %(following_token)s)
"""

# Holders whose lock is free are gone: their rows go, their claims are given back. A claim
# whose handling had begun counts one abandoned claim, and keeps who abandoned it.
# `pg_try_advisory_xact_lock` succeeds only on a key no live session holds (the lock
# taken here ends with this statement's transaction); this process's own key is skipped,
# as its session holds that lock and would take it again.
REAP = """
WITH dead AS (
    DELETE FROM holders
    WHERE key <> %(me)s AND pg_try_advisory_xact_lock(key)
    RETURNING key, record
), freed AS (
    UPDATE riddles r SET
        holder = NULL, token = NULL, begun = false,
        abandoned = CASE WHEN r.begun THEN r.abandoned + 1 ELSE r.abandoned END,
        dead = CASE WHEN r.begun THEN
            coalesce((SELECT d.record FROM dead d WHERE d.key = r.holder), '{}'::jsonb)
            || jsonb_build_object('rev', r.rev)
            ELSE r.dead END
    WHERE r.holder IS NOT NULL AND r.holder <> %(me)s
      AND (r.holder IN (SELECT key FROM dead)
           OR NOT EXISTS (SELECT 1 FROM holders h WHERE h.key = r.holder))
    RETURNING r.id, r.queue
)
SELECT id, queue FROM freed
"""

# Claims whose holder is gone, for `examine`: the same test as `REAP`, changing nothing.
DEAD_CLAIMS = """
SELECT r.id, r.queue, coalesce(h.record, '{}'::jsonb)
FROM riddles r LEFT JOIN holders h ON h.key = r.holder
WHERE r.holder IS NOT NULL AND r.holder <> %(me)s
  AND (h.key IS NULL OR pg_try_advisory_xact_lock(h.key))
ORDER BY r.id
"""

# Holders alive now (their lock is held), other than this process: for `copy`.
LIVE_HOLDERS = """
SELECT record FROM holders
WHERE key <> %(me)s AND NOT pg_try_advisory_xact_lock(key)
ORDER BY since
"""
