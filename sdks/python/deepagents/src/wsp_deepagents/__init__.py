"""`wsp_deepagents`: a Deep Agents backend over a wsp workspace (`WspBackend`)."""

from ._backend import WspBackend
from ._version import __version__

__all__ = ["WspBackend", "__version__"]
