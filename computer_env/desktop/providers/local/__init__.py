"""``--provider local``: one sandboxed X desktop per instance on this machine (bubblewrap, a network
namespace, cgroups), the session it runs and what a dead run leaves behind.

May import: the shared provider modules (``base``, ``options``, ``registry``, ``limits``) and
``guest``; never another provider.

``LocalSandboxProvider`` is importable from this path as before; it loads on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from computer_env.lazy import lazy_names

if TYPE_CHECKING:
    from computer_env.desktop.providers.local.provider import LocalSandboxProvider

__getattr__ = lazy_names(
    __name__,
    {
        "computer_env.desktop.providers.local.provider": ("LocalSandboxProvider",),
    },
)

__all__ = ["LocalSandboxProvider"]
