"""The version of this package: the version of the wsp crates it is released with."""

__version__ = "0.1.0"
