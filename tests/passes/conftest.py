"""Pass tests: every pass sees only its arguments. AlterOpLayout's registered pass blocks
convolutions by ``DEFAULT_BLOCK`` (16) on every machine — a build passes its target's block
instead — so the goldens hold everywhere without pinning anything."""

from __future__ import annotations

import pe  # noqa: F401  (registers the PartialEvaluate pass: goldens, differential tests)
