"""Errors of the model layer, in a module of their own so that every other one can raise them."""


class ModelLoadError(RuntimeError):
    """A model that is named correctly but cannot be loaded (missing, corrupt, offline, unsafe).

    Its message is one line that names the file, folder or setting at fault and
    what to do; ``fixtures.pool.ModelPool`` fails each test of the model with it,
    without a traceback, and does not try the model again.
    """
