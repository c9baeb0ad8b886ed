"""The checklist's tests (shared/reference/bad-inputs.md), one file per area, rows cited "#N".

The sandbox rows run whole turns through the real CLI on the rehearsal model, on the
end-to-end rig of tests/e2e.
"""

from tests.e2e.conftest import rehearse

__all__ = ["rehearse"]
