#!/usr/bin/env python3
"""Opens an HTML page in headless Chromium and takes a screenshot of it.

    tools/html_screenshot.py PAGE.html OUT.png [--width 1280] [--height 900]
        [--scroll-to SELECTOR]

The README's pictures of the HTML report are made with it:

    bazel-bin/tools/torchscan --example resnet18 --html /tmp/resnet18.html
    tools/html_screenshot.py /tmp/resnet18.html docs/images/html-report.png
    tools/html_screenshot.py /tmp/resnet18.html docs/images/html-report-tables.png --scroll-to '#types'

It is also the browser driver of tests/python/test_html_browser.py. It talks
to Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe:
NUL-separated JSON messages on file descriptors 3 and 4), so it needs
nothing beyond the standard library and Debian's `chromium`: no network, no
driver, no websocket client.
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# What the flags do: no sandbox (root in a container), no GPU, and nothing
# that reaches the network on its own (QUIC, component updates, sync,
# background services); a fresh profile each time.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-pipe",
]


def find_chromium() -> str | None:
    """$CHROMIUM, else Debian's chromium (or a chromium-browser) on PATH."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    for name in ("chromium", "chromium-browser"):
        if path := shutil.which(name):
            return path
    return None


class BrowserError(RuntimeError):
    pass


class Chromium:
    """One headless Chromium with one page; a context manager.

    ``events`` keeps every DevTools event received, so that a test can check
    the console and the network after the fact.
    """

    def __init__(self, executable: str | None = None, timeout: float = 60.0) -> None:
        self.executable = executable or find_chromium()
        if self.executable is None:
            raise BrowserError("Chromium is not installed (tools/setup installs Debian's chromium)")
        self.timeout = timeout
        self.events: list[dict[str, Any]] = []
        self._next_id = 0
        self._buffer = b""

    def __enter__(self) -> Chromium:
        self._profile = tempfile.TemporaryDirectory(prefix="torchscan-chromium-")
        commands_read, commands_write = os.pipe()
        replies_read, replies_write = os.pipe()
        # Chromium reads commands on fd 3 and writes replies on fd 4. Move
        # the child's ends above 10 first, so the redirections below cannot
        # clobber one with the other.
        child_read = fcntl.fcntl(commands_read, fcntl.F_DUPFD, 10)
        child_write = fcntl.fcntl(replies_write, fcntl.F_DUPFD, 10)
        os.close(commands_read)
        os.close(replies_write)
        command = [self.executable, *CHROMIUM_FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"]
        self._process = subprocess.Popen(
            ["bash", "-c", f'exec "$@" 3<&{child_read} 4>&{child_write} {child_read}<&- {child_write}>&-', "bash"]
            + command,
            pass_fds=(child_read, child_write),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        os.close(child_read)
        os.close(child_write)
        self._commands = os.fdopen(commands_write, "wb", buffering=0)
        self._replies = replies_read
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=True)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        try:
            self.send("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._commands.close()
        os.close(self._replies)
        self._process.stderr.close()
        self._profile.cleanup()

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._replies], [], [], remaining)[0]:
                raise BrowserError(f"Chromium did not answer within {self.timeout} s")
            chunk = os.read(self._replies, 1 << 16)
            if not chunk:
                raise BrowserError("Chromium closed the DevTools pipe: " + self._process.stderr.read().decode()[-2000:])
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: bool = False) -> dict[str, Any]:
        """Sends one command and returns its result; events read meanwhile
        are kept in ``events``."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        self._commands.write(json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") != self._next_id:
                self.events.append(reply)
                continue
            if "error" in reply:
                raise BrowserError(f"{method}: {reply['error']}")
            return reply["result"]

    def wait_for(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            event = self._receive(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return event

    def open(self, path: Path, width: int = 1280, height: int = 900) -> None:
        """Loads a file at the given viewport size and waits for its load event."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )
        self.send("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=True)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page; a thrown
        exception is a BrowserError."""
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session=True
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    # NOTE [Injected input]: clicks, mouse moves and keys go through the
    # DevTools Input domain, as a person's would: the browser hit-tests the
    # point (a hidden or covered element does not get the click) and runs
    # the default actions (focus, typing into a focused field).

    def center_of(self, selector: str) -> tuple[float, float]:
        """Scrolls the first element matching `selector` into view and
        returns its centre in viewport coordinates."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " if (!e) return null; e.scrollIntoView({block: 'center'});"
            " const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        if box is None:
            raise BrowserError(f"no element matches {selector!r}")
        return box[0], box[1]

    def click(self, selector: str) -> None:
        """A left click at the centre of the element `selector` names."""
        x, y = self.center_of(selector)
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, session=True)
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
                session=True,
            )
        self.settle()

    def settle(self) -> None:
        """Waits until the page has run what an input queued (a <details>
        toggle event is a task of its own) and drawn a frame."""
        self.evaluate("new Promise(done => requestAnimationFrame(() => setTimeout(done, 0)))")

    def hover(self, selector: str) -> None:
        """Moves the mouse onto the centre of the element `selector` names."""
        x, y = self.center_of(selector)
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, session=True)

    def type_text(self, text: str) -> None:
        """Types `text` into the focused element."""
        for character in text:
            self.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": character, "text": character}, session=True)
            self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": character}, session=True)

    def press(self, key: str) -> None:
        """Presses a named key ("Escape", "Enter", "/") on the focused element."""
        codes = {"Escape": 27, "Enter": 13, "/": 191, " ": 32}
        params = {"key": key, "windowsVirtualKeyCode": codes.get(key, 0)}
        if len(key) == 1:
            params["text"] = key
        self.send("Input.dispatchKeyEvent", {"type": "keyDown", **params}, session=True)
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": key}, session=True)

    def screenshot(self, out: Path) -> None:
        data = self.send("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        Path(out).write_bytes(base64.b64decode(data))

    def console_problems(self) -> list[str]:
        """Script exceptions, console errors and warnings, and error log
        entries, as text."""
        problems = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                problems.append(json.dumps(params["exceptionDetails"]))
            elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "warning", "assert"):
                problems.append(" ".join(str(arg.get("value", arg.get("description"))) for arg in params["args"]))
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                problems.append(params["entry"]["text"])
        return problems

    def requested_urls(self) -> list[str]:
        return [
            event["params"]["request"]["url"]
            for event in self.events
            if event.get("method") == "Network.requestWillBeSent"
        ]


def take_screenshot(
    page: Path, out: Path, width: int = 1280, height: int = 900, scroll_to: str | None = None
) -> list[str]:
    """Screenshots `page` into `out`, scrolled so that the element
    `scroll_to` (a CSS selector) is at the top; returns the page's console
    problems."""
    with Chromium() as browser:
        browser.open(page, width, height)
        if scroll_to:
            if not browser.evaluate(f"(e => e ? (e.scrollIntoView(), true) : false)(document.querySelector({json.dumps(scroll_to)}))"):
                raise BrowserError(f"--scroll-to: no element matches {scroll_to!r}")
            browser.settle()
        browser.screenshot(out)
        return browser.console_problems()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--scroll-to", metavar="SELECTOR", help="scroll this element to the top first")
    args = parser.parse_args()
    try:
        problems = take_screenshot(args.page, args.out, args.width, args.height, args.scroll_to)
    except BrowserError as error:
        print(f"html_screenshot: {error}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"html_screenshot: console: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
