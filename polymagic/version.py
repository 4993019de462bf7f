"""The package version, in a module of its own so that the command line can print it
without importing the package's ``__init__`` (which loads the magic)."""
__version__ = "0.1.0"
