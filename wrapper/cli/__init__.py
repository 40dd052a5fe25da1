"""The ``kdev`` command line, one module per verb group."""
