"""``--provider ray``: each desktop is a Ray actor on some node of a cluster (the provider, the
actor's body, the cluster side and the door a worker on another host goes through). The only
package that imports ``ray``.

May import: the shared provider modules (``base``, ``options``, ``registry``, ``limits``,
``ports``) and ``computer_env.desktop.providers.local`` (what a node leaves behind).
"""
