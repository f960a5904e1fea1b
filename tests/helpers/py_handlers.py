"""Python handlers named by module:attr in the tests."""

from pathlib import Path


def decline(job):
    """Declines every riddle, leaving a trace that it was asked."""
    (job.spool_root / "declined.txt").write_text(job.riddle.id)
    return {}


def count_extractions(job):
    """A text extractor that counts its calls in the file $COUNT_FILE."""
    import os

    with open(os.environ["COUNT_FILE"], "a") as handle:
        handle.write("x\n")
    return {"variables": {}, "text": Path(job.item_path).read_text()}


count_extractions.types = {"text"}


def slow_calculator(job):
    """The built-in calculator, after a pause: handlers that take time, for chaos runs."""
    import time

    from riddlectl.handlers.builtin.calculator import calculator

    time.sleep(0.01)
    return calculator(job)


def sluggish_calculator(job):
    """The built-in calculator after a tenth of a second: work that one process cannot
    finish alone before a second one has started."""
    import time

    from riddlectl.handlers.builtin.calculator import calculator

    time.sleep(0.1)
    return calculator(job)


def raise_huge(job):
    """Fails with a message of several megabytes."""
    raise RuntimeError("boom " * 1_000_000)


raise_huge.types = {"text"}


def record_extractions(job):
    """A solver that writes the extractions it was given to $RECORD_DIR/<id>.json and
    answers 1."""
    import json
    import os

    path = Path(os.environ["RECORD_DIR"]) / f"{job.riddle.id}.json"
    path.write_text(json.dumps(job.extractions))
    return {"solution": "1"}
