"""Answers 1 and appends its RIDDLE_ID to the file named by $SOLVE_LOG (one write, O_APPEND)."""

import json
import os
import sys

json.load(sys.stdin)
fd = os.open(os.environ["SOLVE_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
os.write(fd, f"{os.environ['RIDDLE_ID']} {os.getppid()}\n".encode())
os.close(fd)
json.dump({"solution": "1", "explanation": "logged"}, sys.stdout)
