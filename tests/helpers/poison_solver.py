"""Kills its agent (the parent process) for riddles whose id starts with `poison`;
answers 1 for every other riddle."""

import json
import os
import signal
import sys
import time

json.load(sys.stdin)
if os.environ["RIDDLE_ID"].startswith("poison"):
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(5)
json.dump({"solution": "1", "explanation": "not poison"}, sys.stdout)
