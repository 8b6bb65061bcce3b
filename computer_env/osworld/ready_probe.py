#!/usr/bin/python3
"""Is a LibreOffice window ready for input? A targeted AT-SPI walk, run INSIDE the desktop.

Runs under the desktop's system python3 (python3-gi, gir1.2-atspi-2.0; no project imports): the
harness sends this file's text to ``/execute`` as ``python3 -c SOURCE [TITLE]``. It walks only
the soffice frame whose title contains TITLE (the active one when TITLE is empty), skipping menus
and the cells of tables (a full accessibility dump of a spreadsheet takes tens of seconds), and
prints one JSON object::

    {"app": bool, "frame": title|null, "active": bool, "toolbars": N,
     "focus": role|null, "in_document": bool, "error": text|null}

``in_document``: the focused accessible is the document itself or inside it (Calc's sheet table,
Writer's paragraph): the cell / paragraph cursor exists and keyboard input goes to it.
"""

import json
import sys

MAX_NODES = 3000
MAX_CHILDREN = 200


def _roles(atspi):
    r = atspi.Role
    skip = {r.MENU_BAR, r.MENU, r.POPUP_MENU, r.TABLE_CELL, r.LIST, r.TREE, r.TREE_TABLE}
    documents = {r.DOCUMENT_SPREADSHEET, r.DOCUMENT_TEXT, r.DOCUMENT_PRESENTATION,
                 r.DOCUMENT_FRAME}
    return skip, documents


def probe(title):
    out = {"app": False, "frame": None, "active": False, "toolbars": 0, "focus": None,
           "in_document": False, "error": None}
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


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1] if len(sys.argv) > 1 else "")))
