"""The distribution's name and version: a leaf any module may import.

`wheel/__init__.py` re-exports both, so `wheel.__version__` and
`wheel.__distribution__` read as before; modules inside the package import
them from here, so none of them imports the package root (whose lazy names
lead to the SDK and the executor). Kept equal to `version` in pyproject.toml.
"""

__distribution__ = "wheel-scheduler"
__version__ = "0.1.0"
