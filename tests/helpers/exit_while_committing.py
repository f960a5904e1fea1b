"""Commits riddles back and forth between two queues in daemon threads, each with a spool
object of its own, and exits from the main thread meanwhile (after argv[2] seconds), as
an agent whose workers are still busy does. Usage: SPOOL SECONDS."""

import sys
import threading
import time
from pathlib import Path

from riddlectl.document.model import Riddle
from riddlectl.spool import open_spool
from riddlectl.spool.states import Queue

root = Path(sys.argv[1])
open_spool(root, create=True, durable=False).add(
    [Riddle.model_validate({"id": f"t{i}", "riddle": {"question": "x ="}}) for i in range(80)],
    Queue.INCOMING,
)


def churn() -> None:
    spool = open_spool(root, create=False, durable=False)
    while True:
        for inbox, to in ((Queue.INCOMING, Queue.EXTRACTED), (Queue.EXTRACTED, Queue.INCOMING)):
            for claim in spool.claim(inbox, limit=8):
                spool.commit(claim, claim.riddle, to)


for _ in range(4):
    threading.Thread(target=churn, daemon=True).start()
time.sleep(float(sys.argv[2]))
sys.exit(0)
