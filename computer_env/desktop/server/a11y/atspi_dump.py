#!/usr/bin/python3
"""AT-SPI tree as OSWorld's XML. Runs under Debian's /usr/bin/python3 (python3-gi,
gir1.2-atspi-2.0), NOT the server's venv: the server starts it as a subprocess.

Usage: atspi_dump.py [--terminal] [--chrome-program=PATH ...]. Prints the XML (or, with
--terminal, a JSON object ``{"output": text-or-null}`` with the focused terminal's text). Exit 3:
no accessibility bus. ``--chrome-program``: the program file of the desktop's ``google-chrome``
(see :func:`app_name`).
"""

import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from typing import Any

NS = {
    "st": "https://accessibility.ubuntu.example.org/ns/state",
    "attr": "https://accessibility.ubuntu.example.org/ns/attributes",
    "cp": "https://accessibility.ubuntu.example.org/ns/component",
    "doc": "https://accessibility.ubuntu.example.org/ns/document",
    "docattr": "https://accessibility.ubuntu.example.org/ns/document/attributes",
    "txt": "https://accessibility.ubuntu.example.org/ns/text",
    "val": "https://accessibility.ubuntu.example.org/ns/value",
    "act": "https://accessibility.ubuntu.example.org/ns/action",
}
MAX_DEPTH = 50
MAX_WIDTH = 1024
_BAD_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffc\ufffd\ufffe\uffff]")
_BAD_NAME = re.compile(r"[^A-Za-z0-9_.-]")

try:
    import gi

    gi.require_version("Atspi", "2.0")
    from gi.repository import Atspi, GLib
except (ImportError, ValueError) as exc:  # pragma: no cover - depends on Debian packages
    sys.stderr.write(f"AT-SPI bindings missing (python3-gi, gir1.2-atspi-2.0): {exc}\n")
    sys.exit(4)


def _clean(text):
    return _BAD_XML.sub("", text or "")


def _q(ns, name):
    name = _BAD_NAME.sub("_", name)
    if not name or not (name[0].isalpha() or name[0] == "_"):
        name = "_" + name
    return "{%s}%s" % (NS[ns], name)


def _states(node):
    names = []
    for st in node.get_state_set().get_states():
        names.append(Atspi.StateType(int(st)).value_nick.replace("-", "_"))
    return names


def _attrs(node):
    attrib = {"name": _clean(node.get_name())}
    states = set()
    try:
        for name in _states(node):
            if name:
                states.add(name)
                attrib[_q("st", name)] = "true"
    except GLib.Error:
        pass
    try:
        for key, value in (node.get_attributes() or {}).items():
            if key:
                attrib[_q("attr", key)] = _clean(str(value))
    except GLib.Error:
        pass
    if "visible" in states and "showing" in states:
        try:
            comp = node.get_component_iface()
            if comp is not None:
                r = comp.get_extents(Atspi.CoordType.SCREEN)
                attrib[_q("cp", "screencoord")] = "(%d, %d)" % (r.x, r.y)
                attrib[_q("cp", "size")] = "(%d, %d)" % (r.width, r.height)
        except GLib.Error:
            pass
    text = ""
    try:
        t = node.get_text_iface()
        if t is not None:
            text = _clean(t.get_text(0, t.get_character_count()))
    except GLib.Error:
        pass
    for flag, getter in (("image", "get_image_iface"), ("selection", "get_selection_iface")):
        try:
            if getattr(node, getter)() is not None:
                attrib[flag] = "true"
        except GLib.Error:
            pass
    try:
        v = node.get_value_iface()
        if v is not None:
            for key, fn in (
                ("value", v.get_current_value),
                ("min", v.get_minimum_value),
                ("max", v.get_maximum_value),
                ("step", v.get_minimum_increment),
            ):
                try:
                    attrib[_q("val", key)] = str(fn())
                except GLib.Error:
                    pass
    except GLib.Error:
        pass
    try:
        a = node.get_action_iface()
        if a is not None:
            for i in range(a.get_n_actions()):
                name = a.get_action_name(i).replace(" ", "-")
                attrib[_q("act", name + "_desc")] = _clean(a.get_action_description(i))
                attrib[_q("act", name + "_kb")] = _clean(a.get_key_binding(i))
    except GLib.Error:
        pass
    return attrib, text, states


def _role(node):
    try:
        raw = (node.get_role_name() or "").strip()
    except GLib.Error:
        raw = ""
    tag = _BAD_NAME.sub("-", (raw or "unknown").replace(" ", "-"))
    return raw, tag if tag[0].isalpha() else "role-" + tag


def _showing(node):
    try:
        return node.get_state_set().contains(Atspi.StateType.SHOWING)
    except GLib.Error:
        return False


def _big_table(node, depth, xml_node):
    """Spreadsheets have ~10^10 cells: keep only the block of showing cells."""
    table = node.get_table_iface()
    if table is None:
        return False
    rows, cols = table.get_n_rows(), table.get_n_columns()
    col_base = None
    for r in range(min(rows, 100000)):
        row_found = False
        for c in range(col_base or 0, min(cols, 16384)):
            try:
                cell = table.get_accessible_at(r, c)
            except GLib.Error:
                cell = None
            if cell is not None and _showing(cell):
                if col_base is None:
                    col_base = c
                row_found = True
                xml_node.append(build(cell, depth + 1))
            elif row_found or c >= (col_base or 0) + 500:
                break
        if col_base is not None and not row_found:
            break
        if col_base is None and r >= 500:
            break
    return True


def build(node, depth=0):
    attrib, text, _states_ = _attrs(node)
    raw_role, tag = _role(node)
    el = ET.Element(tag, attrib)
    if text:
        el.text = text
    if depth >= MAX_DEPTH:
        return el
    try:
        count = node.get_child_count()
    except GLib.Error:
        return el
    if raw_role == "table" and count > MAX_WIDTH and _big_table(node, depth, el):
        return el
    for i in range(min(count, MAX_WIDTH)):
        try:
            child = node.get_child_at_index(i)
        except GLib.Error:
            continue
        if child is not None:
            el.append(build(child, depth + 1))
    return el


def _desktop():
    try:
        return Atspi.get_desktop(0)
    except GLib.Error as exc:
        sys.stderr.write(f"no accessibility bus: {exc}\n")
        sys.exit(3)


def terminal_text(desktop):
    """Text of the focused terminal in the active frame (OSWorld's /terminal), or None."""
    for i in range(desktop.get_child_count()):
        app = desktop.get_child_at_index(i)
        if app is None:
            continue
        for j in range(app.get_child_count()):
            frame = app.get_child_at_index(j)
            if frame is None or frame.get_role_name() != "frame":
                continue
            if not frame.get_state_set().contains(Atspi.StateType.ACTIVE):
                continue
            found: list[Any] = []
            todo = [frame]
            while todo and len(found) < 2:
                n = todo.pop()
                if n.get_role_name() == "terminal" and n.get_state_set().contains(
                    Atspi.StateType.FOCUSED
                ):
                    found.append(n)
                todo.extend(
                    c
                    for c in (
                        n.get_child_at_index(k) for k in range(min(n.get_child_count(), MAX_WIDTH))
                    )
                    if c
                )
            if len(found) == 1:
                t = found[0].get_text_iface()
                return _clean(t.get_text(0, t.get_character_count())).rstrip() if t else None
    return None


CHROMIUM_NAME = "Chromium"
CHROME_NAME = "Google Chrome"


def _program_files(pid):
    """The program a process runs: its executable and its argv[0] (either may be unreadable).
    The apps' pids are those of the nest when the desktop has one (env DESKTOP_APP_PROC)."""
    found = set()
    proc = os.environ.get("DESKTOP_APP_PROC") or "/proc"
    try:
        found.add(os.readlink("%s/%d/exe" % (proc, pid)))
    except OSError:
        pass
    try:
        with open("%s/%d/cmdline" % (proc, pid), "rb") as fh:
            argv0 = fh.read().split(b"\0", 1)[0]
        if argv0:
            found.add(os.fsdecode(argv0))
    except OSError:
        pass
    return found


def app_name(app, name, chrome_programs):
    """The embedded desktop substitutes Chromium for Chrome: its ``google-chrome`` runs Chromium
    from its own program file (``/opt/desktop/chrome/chrome``, see
    computer_env/desktop/providers/guest/guest_tools.py) and titles its first window "Google Chrome".
    Chromium names its AT-SPI application after its compiled-in product name, "Chromium", while
    OSWorld's getters look for the application "Google Chrome" (as on its image, where Chrome
    runs). So an application named "Chromium" whose process runs one of ``chrome_programs`` is
    named "Google Chrome"; a ``chromium`` started under its own name keeps its name."""
    if name != CHROMIUM_NAME or not chrome_programs:
        return name
    try:
        pid = app.get_process_id()
    except GLib.Error:
        return name
    if pid > 0 and _program_files(pid) & chrome_programs:
        return CHROME_NAME
    return name


def _chrome_programs(argv):
    prefix = "--chrome-program="
    return {a[len(prefix) :] for a in argv if a.startswith(prefix) and len(a) > len(prefix)}


def main():
    for prefix, uri in NS.items():
        ET.register_namespace(prefix, uri)
    desktop = _desktop()
    if "--terminal" in sys.argv[1:]:
        sys.stdout.write(json.dumps({"output": terminal_text(desktop)}))
        return
    chrome_programs = _chrome_programs(sys.argv[1:])
    root = ET.Element("desktop-frame")
    for i in range(desktop.get_child_count()):
        app = desktop.get_child_at_index(i)
        if app is not None:
            el = build(app, 1)
            el.set("name", app_name(app, el.get("name"), chrome_programs))
            root.append(el)
    sys.stdout.write(ET.tostring(root, encoding="unicode"))


if __name__ == "__main__":
    main()
