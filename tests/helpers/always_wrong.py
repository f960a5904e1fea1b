"""A solver that is always wrong, differently each trial."""

import json
import sys

doc = json.load(sys.stdin)
trial = doc["status"]["trial"]
json.dump({"solution": str(1000 + trial), "explanation": "always wrong"}, sys.stdout)
