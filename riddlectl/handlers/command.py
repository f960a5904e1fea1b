"""External command handlers (`cmd:COMMAND`), with the exit-status protocol of Postfix pipe(8).

The command line is split like a shell would (`shlex`) but run without one; use
`cmd:sh -c '…'` for pipes. It gets the riddle document on stdin and answers with one JSON
object on stdout (empty output means `{}`). Exit 0: done; 65 (EX_DATAERR): the riddle
cannot be handled, fail it now; anything else, a crash or a timeout: an error, retried.
The command runs in its own process group, and the whole group is killed at the timeout,
so a handler's own children cannot outlive it; nor the agent that started it
(`lifeline`).

Its identity, which keys the extraction cache, is the command line and the content of the
files it runs: the executable (found on PATH, or relative to the current directory) and
every argument naming an existing file (`python3 script.py`, `sh ./x.sh`). A script run
through `sh -c '…'` is known by the text of the command only.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import orjson

from riddlectl import inflight
from riddlectl.document import codec as documents
from riddlectl.errors import ConfigError, HandlerFailed, HandlerRefused, HandlerTimeout
from riddlectl.handlers import lifeline
from riddlectl.handlers.base import Job, file_digest
from riddlectl.handlers.reply import parse_reply
from riddlectl.identity import scratch_dir
from riddlectl.spool.extractions import OWN_PATH

EX_DATAERR = 65


class CommandHandler:
    def __init__(self, command: str, stage: str) -> None:
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise ConfigError(f"cannot split the command: {exc}", where=f"cmd:{command}") from None
        if not self.argv:
            raise ConfigError("empty command", where="cmd:")
        self.command = command
        self.stage = stage
        _runnable(self.argv[0], f"cmd:{command}")
        self.files = _files_run(self.argv)

    def current_version(self) -> str:
        """A digest of the command line and of the files it runs, as they are now."""
        parts = [self.command]
        for path in self.files:
            parts += [path, file_digest(path) or "-"]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]

    def environment(self, job: Job, spool_dir: str | None = None) -> dict[str, str]:
        env = dict(os.environ)
        if job.spool_root is None:  # a spool that is no directory: a local view of it
            env["RIDDLE_SPOOL_URL"] = job.spool_name
            here = spool_dir or ""
        else:
            here = str(job.spool_root.resolve())
        env.update(
            lifeline.mark(),
            RIDDLE_ID=job.riddle.id or "",
            RIDDLE_SPOOL=here,
            RIDDLE_DATA=str(job.data_dir.resolve()),
            RIDDLE_STAGE=job.stage,
        )
        if job.item_index is not None and job.item_path is not None:
            env.update(RIDDLE_ITEM=str(job.item_index), RIDDLE_FILE=str(job.item_path))
        return env

    def __call__(self, job: Job) -> dict[str, Any] | None:
        with _spool_view(job) as spool_dir:
            return self._run(job, spool_dir)

    def _run(self, job: Job, spool_dir: str | None) -> dict[str, Any] | None:
        try:
            process = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.environment(job, spool_dir),
                start_new_session=True,
            )
        except OSError as exc:
            raise HandlerFailed(f"cannot run {self.argv[0]}: {exc.strerror}") from None
        lifeline.hold(process.pid)  # its group dies with this process, however it dies
        try:
            with inflight.tracked(f"cmd:{self.command}", pgid=process.pid) as call:
                out, err = self._communicate(process, call, documents.dumps(job.riddle), job)
        finally:
            if process.poll() is None:  # timed out, stopped, or interrupted: leave no orphan
                _kill_group(process)
            lifeline.let_go(process.pid)
        return self._answer(process.returncode, out, err)

    def _communicate(
        self, process: subprocess.Popen[bytes], call: inflight.Call, document: bytes, job: Job
    ) -> tuple[bytes, bytes]:
        """Feed the document and read the answer, within the timeout (see `inflight.wait`)."""
        started = False  # the document is given once; a second try only reads on
        answer = (b"", b"")

        def finished(seconds: float) -> bool:
            nonlocal started, answer
            try:
                answer = process.communicate(None if started else document, timeout=seconds)
            except subprocess.TimeoutExpired:
                return False
            finally:
                started = True
            return True

        if not inflight.wait(call, finished, job.timeout):
            _kill_group(process)
            raise HandlerTimeout(f"{self.argv[0]} timed out after {job.timeout:g} s")
        if call.stopped and process.returncode != 0:
            raise inflight.HandlerStopped(f"{self.argv[0]} was stopped: the agent is stopping")
        return answer

    def _answer(self, status: int, out: bytes, err: bytes) -> dict[str, Any] | None:
        reason = _last_line(err)
        if status == EX_DATAERR:
            raise HandlerRefused(f"{self.argv[0]} refused the riddle (exit 65){reason}")
        if status != 0:
            how = f"killed by signal {-status}" if status < 0 else f"exited with status {status}"
            raise HandlerFailed(f"{self.argv[0]} {how}{reason}")
        return parse_reply(out, self.argv[0])


@contextlib.contextmanager
def _spool_view(job: Job) -> Iterator[str | None]:
    """For a spool that is no directory (a database): a private directory holding the
    riddle's extractions at their references, so that a command reads
    `$RIDDLE_SPOOL/` + `file_extracted` on every spool alike; removed after the call.
    None for a directory spool, which commands read directly."""
    if job.spool_root is not None:
        yield None
        return
    here = scratch_dir("spool")
    try:
        for item, found in zip(job.riddle.data, job.extractions, strict=False):
            reference = item.file_extracted
            if found is None or not reference or not OWN_PATH.fullmatch(reference):
                continue
            os.makedirs(os.path.join(here, os.path.dirname(reference)), exist_ok=True)
            with open(os.path.join(here, reference), "wb") as out:
                out.write(orjson.dumps(found))
        yield here
    finally:
        shutil.rmtree(here, ignore_errors=True)


def _runnable(program: str, where: str) -> None:
    """Refuse (`ConfigError`, naming the absolute path looked for) a program that cannot
    be run, found as a shell finds it: a name with a slash is a path from the current
    directory, any other is looked for on PATH. Checked as the agent starts, so that a
    mistyped handler stops it before it takes a riddle, not after each riddle's attempts."""
    if os.sep not in program:
        if shutil.which(program) is None:
            raise ConfigError(f"{program}: no such program on PATH", where=where)
        return
    path = os.path.abspath(program)
    if not os.path.exists(path):
        raise ConfigError(f"{path}: no such file", where=where)
    if os.path.isdir(path):
        raise ConfigError(f"{path}: is a directory", where=where)
    if not os.access(path, os.X_OK):
        raise ConfigError(
            f"{path}: not executable (chmod +x, or name its interpreter)", where=where
        )


def _files_run(argv: list[str]) -> list[str]:
    """The executable and the existing files named in the arguments, as absolute paths.

    Resolved once, when the agent starts; their content is looked at on every call.
    """
    executable = argv[0] if os.sep in argv[0] else shutil.which(argv[0])
    named = [arg for arg in argv[1:] if os.path.isfile(arg)]
    return [os.path.abspath(path) for path in [executable, *named] if path]


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    try:
        process.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ValueError):
        process.kill()


def _last_line(err: bytes) -> str:
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return f": {lines[-1][:300]}" if lines else ""
