"""Automatic differentiation: reverse and forward mode over the whole language (see ``ad.rules``)."""
