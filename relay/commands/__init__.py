"""One module per ``relay`` sub-command; see :mod:`relay.cli`."""
