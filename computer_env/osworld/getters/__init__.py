"""The built-in getters: a subset of OSWorld's, same names (``get_<type>``), configs and results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from computer_env.osworld.getters.chrome import (
    get_active_tab_info,
    get_active_tab_url,
    get_active_url_from_accessTree,
    get_open_tabs_info,
)
from computer_env.osworld.getters.file import (
    get_cache_file,
    get_cloud_file,
    get_content_from_vm_file,
    get_list_directory,
    get_vm_file,
)
from computer_env.osworld.getters.general import (
    get_accessibility_tree,
    get_rule,
    get_vm_command_error,
    get_vm_command_line,
    get_vm_screen_size,
    get_vm_terminal_output,
)

Getter = Callable[[Any, dict[str, Any]], Any]

GETTERS: dict[str, Getter] = {
    name[len("get_"):]: fn for name, fn in dict(globals()).items()
    if name.startswith("get_") and callable(fn)
}
"""Getter type -> function."""

__all__ = ["GETTERS", "Getter", *sorted(f"get_{n}" for n in GETTERS)]
