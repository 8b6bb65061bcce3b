#!/usr/bin/python3
"""Readiness probes run INSIDE the desktop: LibreOffice's document and Chrome's visible page.

Runs under the desktop's system python3 (standard library; python3-gi and gir1.2-atspi-2.0 for
LibreOffice; no project imports): the harness sends this file's text to ``/execute`` as
``python3 -c SOURCE office [TITLE]`` or ``python3 -c SOURCE page --js PAGE_JS PORT...``
(``PAGE_JS``: the text of ``page_ready.js``, sent beside it); either prints one JSON object.

``office``: a targeted AT-SPI walk of the soffice frame whose title contains TITLE (the active
one when TITLE is empty), skipping menus and the cells of tables (a full accessibility dump of a
spreadsheet takes tens of seconds)::

    {"app": bool, "frame": title|null, "active": bool, "toolbars": N,
     "focus": role|null, "in_document": bool, "error": text|null}

``in_document``: the focused accessible is the document itself or inside it (Calc's sheet table,
Writer's paragraph): the cell / paragraph cursor exists and keyboard input goes to it.

``page``: every page of the Chrome whose DevTools answer on the first of the PORTs that does
(``--remote-debugging-port``; OSWorld forwards 9222 to it), each evaluated with ``PAGE_JS`` (``page_ready.js``)::

    {"port": P|null, "error": text|null, "pages": [{"url", "title", "ready": readyState,
     "visible": visibilityState, "fcp": bool, "frame": bool, "content": bool, "bg": colour|null,
     "x", "y", "ow", "oh", "iw", "ih", "dpr"} | {"url", "error"}]}
"""

import base64
import json
import os
import socket
import struct
import sys
import urllib.request
from typing import Any

MAX_NODES = 3000
MAX_CHILDREN = 200


def _roles(atspi):
    r = atspi.Role
    # Subtrees that cannot hold the document: a focus inside them is "not in the document"
    # whether or not the walk finds it, so the verdict is the same without their children
    # (a toolbar's buttons are half of a Calc frame's nodes).
    skip = {
        r.MENU_BAR,
        r.MENU,
        r.POPUP_MENU,
        r.TABLE_CELL,
        r.LIST,
        r.TREE,
        r.TREE_TABLE,
        r.TOOL_BAR,
        r.STATUS_BAR,
        r.SCROLL_BAR,
        r.PUSH_BUTTON,
        r.TOGGLE_BUTTON,
        r.COMBO_BOX,
    }
    documents = {r.DOCUMENT_SPREADSHEET, r.DOCUMENT_TEXT, r.DOCUMENT_PRESENTATION, r.DOCUMENT_FRAME}
    return skip, documents


def probe(title):
    out: dict[str, Any] = {
        "app": False,
        "frame": None,
        "active": False,
        "toolbars": 0,
        "focus": None,
        "in_document": False,
        "error": None,
    }
    try:
        import gi

        gi.require_version("Atspi", "2.0")
        from gi.repository import Atspi
    except (ImportError, ValueError) as exc:
        out["error"] = "AT-SPI bindings missing: %s" % exc
        return out
    skip, documents = _roles(Atspi)
    st = Atspi.StateType
    desktop = Atspi.get_desktop(0)
    frames = []
    for i in range(desktop.get_child_count()):
        app = desktop.get_child_at_index(i)
        if app is None or (app.get_name() or "") != "soffice":
            continue
        out["app"] = True
        for j in range(app.get_child_count()):
            frame = app.get_child_at_index(j)
            if frame is None or frame.get_role() != Atspi.Role.FRAME:
                continue
            name = frame.get_name() or ""
            active = frame.get_state_set().contains(st.ACTIVE)
            if (title and title in name) or (not title and active):
                frames.append((active, name, frame))
    if not frames:
        return out
    frames.sort(key=lambda f: not f[0])
    active, name, frame = frames[0]
    out["frame"], out["active"] = name, active
    stack = [(frame, False)]
    seen = 0
    while stack and seen < MAX_NODES:
        node, in_doc = stack.pop()
        seen += 1
        try:
            role = node.get_role()
            states = node.get_state_set()
        except Exception:  # noqa: BLE001 - a node vanished while walking
            continue
        if role == Atspi.Role.TOOL_BAR and states.contains(st.SHOWING):
            out["toolbars"] += 1
        here_doc = in_doc or role in documents
        if states.contains(st.FOCUSED):
            out["focus"] = node.get_role_name()
            out["in_document"] = here_doc
        if role in skip or role == Atspi.Role.TABLE:
            continue
        try:
            count = min(node.get_child_count(), MAX_CHILDREN)
        except Exception:  # noqa: BLE001
            continue
        for k in range(count - 1, -1, -1):
            child = node.get_child_at_index(k)
            if child is not None:
                stack.append((child, here_doc))
    return out


class _Socket:
    """A WebSocket client, just enough for DevTools' JSON messages (RFC 6455, no extensions)."""

    def __init__(self, port, path, timeout):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n" % (path, port, key)
            ).encode()
        )
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if head.split(b"\r\n", 1)[0].split(b" ")[1:2] != [b"101"]:
            raise OSError("DevTools refused the WebSocket: %r" % head[:80])

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise OSError("DevTools closed the connection")
        self.buf += chunk

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text):
        data, mask = text.encode(), os.urandom(4)
        n = len(data)
        head = (
            struct.pack("!BB", 0x81, 0x80 | n)
            if n < 126
            else (
                struct.pack("!BBH", 0x81, 0xFE, n)
                if n < 65536
                else struct.pack("!BBQ", 0x81, 0xFF, n)
            )
        )
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        parts = []
        while True:
            b0, b1 = self._take(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._take(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._take(8))[0]
            payload = self._take(n)
            if b0 & 0x0F == 8:
                raise OSError("DevTools closed the WebSocket")
            if b0 & 0x0F in (0, 1, 2):
                parts.append(payload)
                if b0 & 0x80:
                    return b"".join(parts).decode("utf-8", "replace")

    def call(self, msg_id, method, params):
        self.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.recv())
            if msg.get("id") == msg_id:
                return msg

    def close(self):
        self.sock.close()


def page_probe(ports, page_js, timeout=8.0):
    """The pages of the Chrome whose DevTools answer on the first of ``ports`` that does:
    ``{"port": P, "pages": [PAGE_JS's answer, or {"url", "error"}], "error": text|null}``."""
    out: dict[str, Any] = {"port": None, "pages": [], "error": None}
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    targets, errors = None, []
    for port in ports:
        try:
            with opener.open("http://127.0.0.1:%d/json/list" % port, timeout=timeout) as res:
                targets = json.loads(res.read().decode("utf-8", "replace"))
            out["port"] = port
            break
        except (OSError, ValueError) as exc:
            errors.append("port %d: %s" % (port, exc))
    if targets is None:
        out["error"] = "Chrome's DevTools do not answer (%s)" % "; ".join(errors)
        return out
    for target in targets:
        url = target.get("url", "")
        ws = target.get("webSocketDebuggerUrl", "")
        if target.get("type") != "page" or url.startswith("devtools://") or not ws:
            continue
        page = {"url": url, "error": None}
        try:
            sock = _Socket(out["port"], "/" + ws.split("/", 3)[3], timeout)
            try:
                res = sock.call(
                    1,
                    "Runtime.evaluate",
                    {"expression": page_js, "awaitPromise": True, "returnByValue": True},
                )
            finally:
                sock.close()
            value = res.get("result", {}).get("result", {}).get("value")
            if isinstance(value, dict):
                page = value
            else:
                page["error"] = str(
                    res.get("error")
                    or res.get("result", {}).get("exceptionDetails", {}).get("text")
                    or "no answer"
                )
        except (OSError, ValueError, IndexError) as exc:
            page["error"] = str(exc)
        out["pages"].append(page)
        if len(out["pages"]) >= 12:
            break
    return out


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "page":
        page_args = sys.argv[2:]
        script = "document.readyState"
        if page_args[:1] == ["--js"] and len(page_args) > 1:
            script, page_args = page_args[1], page_args[2:]
        print(json.dumps(page_probe([int(p) for p in page_args] or [9222], script)))
    else:
        args = sys.argv[2:] if len(sys.argv) > 1 and sys.argv[1] == "office" else sys.argv[1:]
        print(json.dumps(probe(args[0] if args else "")))
