"""A small OpenAI-compatible transcription server: `POST /v1/audio/transcriptions` with
faster-whisper, for `scripts/transcribe-server` (which runs it in a venv of its own).

Takes what OpenAI's route takes (multipart: `file`, `model`, `language`, `prompt`,
`response_format` of `json`, `text` or `verbose_json`, `temperature`) and answers as it
does; `verbose_json` carries the segments with their `avg_logprob` and `no_speech_prob`.
`GET /v1/models` lists the one model, for `wait`. One recording is transcribed at a time
(the model is not shared between threads); a body over 32 MiB is refused with 413.

Standard library only besides faster-whisper, so the venv holds nothing else.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import threading
import time
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_BODY = 32 * 1024 * 1024
ROUTE = "/v1/audio/transcriptions"


def parse_form(content_type: str, body: bytes) -> dict[str, bytes]:
    """The fields of a multipart/form-data body, by name (files and text alike, as bytes)."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    fields: dict[str, bytes] = {}
    if not message.is_multipart():
        return fields
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            payload = part.get_payload(decode=True)
            fields[str(name)] = payload if isinstance(payload, bytes) else b""
    return fields


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], model: Any, seed: Any, name: str, max_tokens: int
    ) -> None:
        super().__init__(address, Handler)
        self.seed = seed
        self.max_tokens = max_tokens
        self.model = model
        self.name = name
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # one line per request
        sys.stderr.write(f"{self.address_string()} {format % args}\n")

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            models = [{"id": self.server.name, "object": "model"}]
            self._json(200, {"object": "list", "data": models})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        if self.path.rstrip("/") != ROUTE:
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY:
            self._json(413, {"error": {"message": f"body over {MAX_BODY} bytes"}})
            self.close_connection = True
            return
        fields = parse_form(self.headers.get("content-type", ""), self.rfile.read(length))
        if "file" not in fields:
            self._json(400, {"error": {"message": "no file in the form"}})
            return
        try:
            reply = self._transcribe(fields)
        except Exception as exc:  # a recording the decoder cannot read
            self._json(400, {"error": {"message": f"{type(exc).__name__}: {exc}"}})
            return
        form = fields.get("response_format", b"json").decode()
        if form == "text":
            self._send(200, "text/plain; charset=utf-8", reply["text"].encode())
        elif form == "verbose_json":
            self._json(200, reply)
        else:
            self._json(200, {"text": reply["text"]})

    def _transcribe(self, fields: dict[str, bytes]) -> dict[str, Any]:
        language = fields.get("language", b"").decode() or None
        prompt = fields.get("prompt", b"").decode() or None
        # As OpenAI's route: temperature 0 lets the decoder raise it when a try fails
        # (a repetition loop, a low log-probability), as Whisper's own fallback does.
        temperature: Any = float(fields.get("temperature", b"0") or 0)
        if temperature == 0:
            temperature = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
        started = time.monotonic()
        with self.server.lock:
            # The fallback samples: a seed per request makes one recording always come back
            # as the same text, whatever ran before it (the tests read exact words).
            self.server.seed(0)
            segments, info = self.server.model.transcribe(
                io.BytesIO(fields["file"]),
                language=language,
                initial_prompt=prompt,
                temperature=temperature,
                beam_size=5,
                condition_on_previous_text=False,
                vad_filter=False,
                # Timestamp tokens make tiny.en repeat a short clip's sentence until the
                # token bound (`z equals 20. z equals 20. …`, then a random fallback);
                # without them it says it once. The reply keeps one segment per window.
                without_timestamps=True,
                # A bound on each 30 s window's tokens: a recogniser caught in a loop
                # (`z is 50. z is 50. …`) stops there instead of after 448 tokens.
                max_new_tokens=self.server.max_tokens,
            )
            found = [
                {
                    "id": s.id,
                    "seek": s.seek,
                    "start": round(s.start, 3),
                    "end": round(s.end, 3),
                    "text": s.text,
                    "tokens": list(s.tokens),
                    "temperature": s.temperature,
                    "avg_logprob": s.avg_logprob,
                    "compression_ratio": s.compression_ratio,
                    "no_speech_prob": s.no_speech_prob,
                }
                for s in segments
            ]
        sys.stderr.write(f"transcribed in {time.monotonic() - started:.2f} s\n")
        return {
            "task": "transcribe",
            "language": info.language,
            "duration": round(info.duration, 3),
            "text": "".join(s["text"] for s in found).strip(),
            "segments": found,
        }

    def _json(self, status: int, data: Any) -> None:
        self._send(status, "application/json", json.dumps(data).encode())

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a CTranslate2 Whisper model directory")
    parser.add_argument("--name", default="tiny.en", help="the model's name in /v1/models")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=128, help="per 30 s window")
    args = parser.parse_args()
    from ctranslate2 import set_random_seed
    from faster_whisper import WhisperModel

    model = WhisperModel(args.model, device="cpu", compute_type="int8", cpu_threads=args.threads)
    server = Server((args.host, args.port), model, set_random_seed, args.name, args.max_tokens)
    sys.stderr.write(f"transcribe server: {args.name} on http://{args.host}:{args.port}/v1\n")
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
