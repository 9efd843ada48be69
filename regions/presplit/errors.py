"""The planner's one error type.

Every bad input to a split algorithm, the evaluator or the script raises
``PresplitError`` (a ``ValueError``) with a message that names the bad value;
the script turns it into one line on stderr and exit status 2.
"""


class PresplitError(ValueError):
    """A split plan or evaluation was asked for with input that cannot work."""
