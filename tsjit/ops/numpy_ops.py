"""NumPy in script code: importing this module registers NumPy's functions, ndarray's
methods and attributes, and the dtype functions, one table module per purpose."""
from . import (  # noqa: F401  (each module registers its ops on import)
    numpy_creation,
    numpy_elementwise,
    numpy_linalg,
    numpy_reductions,
    numpy_shape,
    numpy_ufuncs,
)
