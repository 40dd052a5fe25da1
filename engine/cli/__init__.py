"""The ``li`` command line, one module per verb group."""
