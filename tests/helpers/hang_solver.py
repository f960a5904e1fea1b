"""Hangs, with a child of its own, for riddles whose id starts with `hang`; writes its
and its child's pids to $HANG_PIDS first. Answers 1 for every other riddle."""

import json
import os
import subprocess
import sys
import time

json.load(sys.stdin)
if os.environ["RIDDLE_ID"].startswith("hang"):
    child = subprocess.Popen(["sleep", "300"])
    with open(os.environ["HANG_PIDS"], "a") as handle:
        handle.write(f"{os.getpid()} {child.pid}\n")
    time.sleep(300)
json.dump({"solution": "1", "explanation": "quick"}, sys.stdout)
