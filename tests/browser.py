"""A headless Chromium driven through its DevTools protocol, for the HTML report's tests.

:func:`open_page` loads a file in a fresh headless Chromium (its own profile folder, a
free port) and gives back what a reader's browser would see: every console message and
uncaught error, every request that left the file, what a script of the test's own
evaluated in the page, and a screenshot. The protocol is spoken over a websocket, whose
client side (RFC 6455, text frames, client masking) is the few lines below: no package
beyond the standard library.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: where the browser is looked for, in order
NAMES = ("chromium", "chromium-browser", "google-chrome")
ENV_REQUIRE = "SBC_SQL_REQUIRE_CHROMIUM"


def find() -> str | None:
    for name in NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class WebSocket:
    """A websocket client: send a text message, receive the next one."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        m = re.fullmatch(r"ws://([^/:]+):(\d+)(/.*)", url)
        assert m, url
        host, port, path = m.group(1), int(m.group(2)), m.group(3)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("the browser closed the connection during the handshake")
            head += chunk
        assert head.split(b"\r\n", 1)[0].split()[1] == b"101", head

    def _read(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("the browser closed the connection")
            out += chunk
        return out

    def send(self, text: str) -> None:
        data = text.encode()
        header = bytes([0x81])
        n = len(data)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(header + mask + masked)

    def receive(self) -> str:
        message = b""
        while True:
            first, second = self._read(2)
            opcode, n = first & 0x0F, second & 0x7F
            if n == 126:
                (n,) = struct.unpack(">H", self._read(2))
            elif n == 127:
                (n,) = struct.unpack(">Q", self._read(8))
            mask = self._read(4) if second & 0x80 else b""
            payload = self._read(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:
                raise ConnectionError("the browser closed the websocket")
            if opcode == 0x9:  # ping: answered, not a message
                continue
            message += payload
            if first & 0x80:
                return message.decode()

    def close(self) -> None:
        self.sock.close()


@dataclass
class Page:
    """What loading a page gave: its problems, its requests, the test's evaluations."""

    console: list[dict[str, Any]] = field(default_factory=list)
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    log_errors: list[dict[str, Any]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    screenshot: bytes = b""

    @property
    def errors(self) -> list[str]:
        """Every error a reader's console would show: uncaught exceptions, console.error
        and console.assert messages, and the browser's own error entries."""
        out = [json.dumps(e.get("exceptionDetails", e))[:300] for e in self.exceptions]
        out += [json.dumps(c)[:300] for c in self.console if c.get("type") in ("error", "assert")]
        out += [json.dumps(e)[:300] for e in self.log_errors]
        return out


class Session:
    """One DevTools connection to one page target."""

    def __init__(self, ws: WebSocket, page: Page) -> None:
        self.ws, self.page, self.next_id = ws, page, 0

    def _event(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled":
            self.page.console.append({"type": params.get("type"), "args": params.get("args")})
        elif method == "Runtime.exceptionThrown":
            self.page.exceptions.append(params)
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            self.page.log_errors.append(params["entry"])
        elif method == "Network.requestWillBeSent":
            self.page.requests.append(params.get("request", {}).get("url", ""))

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.receive())
            if message.get("id") == mine:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._event(message)

    def wait_for(self, event: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = json.loads(self.ws.receive())
            self._event(message)
            if message.get("method") == event:
                return
        raise TimeoutError(event)

    def drain(self, seconds: float) -> None:
        """Take the events that arrive within ``seconds`` (late console messages)."""
        self.ws.sock.settimeout(seconds)
        try:
            while True:
                self._event(json.loads(self.ws.receive()))
        except TimeoutError:
            pass
        finally:
            self.ws.sock.settimeout(30.0)


def open_page(
    chromium: str,
    path: Path,
    *,
    evaluate: dict[str, str] | None = None,
    width: int = 1000,
    height: int = 900,
    mobile: bool = False,
    full_page: bool = True,
) -> Page:
    """Load ``path`` in a fresh headless Chromium at ``width`` x ``height`` (``mobile``: as a
    phone); ``evaluate`` maps names to expressions the test evaluates in the loaded page
    (their JSON values in ``Page.values``)."""
    page = Page()
    profile = tempfile.mkdtemp(prefix="sbc-chromium-")
    args = [
        chromium,
        "--headless=new",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--remote-debugging-port=0",
        f"--user-data-dir={profile}",
        "about:blank",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.insert(1, "--no-sandbox")  # Chromium refuses to run its sandbox as root
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    reader: threading.Thread | None = None
    try:
        browser_url = None
        deadline = time.monotonic() + 60
        assert proc.stderr is not None
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {proc.returncode} before listening")
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                browser_url = m.group(1)
                break
        assert browser_url, "chromium did not say where DevTools listens"
        # the rest of its chatter is read away, so that a full pipe never stalls it
        reader = threading.Thread(target=proc.stderr.read, daemon=True)
        reader.start()
        port = re.search(r":(\d+)/", browser_url).group(1)  # type: ignore[union-attr]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as resp:
            targets = json.load(resp)
        target = next(t for t in targets if t.get("type") == "page")
        ws = WebSocket(target["webSocketDebuggerUrl"])
        try:
            s = Session(ws, page)
            for domain in ("Runtime", "Log", "Page", "Network"):
                s.call(f"{domain}.enable")
            s.call(
                "Emulation.setDeviceMetricsOverride",
                width=width,
                height=height,
                deviceScaleFactor=1,
                mobile=mobile,
            )
            s.call("Page.navigate", url=path.resolve().as_uri())
            s.wait_for("Page.loadEventFired")
            s.drain(0.5)
            for name, expression in (evaluate or {}).items():
                got = s.call("Runtime.evaluate", expression=expression, returnByValue=True)
                if "exceptionDetails" in got:
                    raise RuntimeError(f"the test's expression {name} failed: {got['exceptionDetails']}")
                page.values[name] = got["result"].get("value")
            shot_args: dict[str, Any] = {"format": "png"}
            if full_page:
                size = s.call("Page.getLayoutMetrics")["cssContentSize"]
                shot_args["captureBeyondViewport"] = True
                shot_args["clip"] = {"x": 0, "y": 0, "width": width, "height": size["height"], "scale": 1}
            shot = s.call("Page.captureScreenshot", **shot_args)
            page.screenshot = base64.b64decode(shot["data"])
        finally:
            ws.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if reader is not None:
            reader.join(timeout=10)
        assert proc.stderr is not None
        proc.stderr.close()
        shutil.rmtree(profile, ignore_errors=True)
    return page
