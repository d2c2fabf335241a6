"""The package version, reported as the context's torchscan_version."""

__version__ = "0.1.0"
