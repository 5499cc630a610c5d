"""silas_exp: declarative ablation runner for the Silas context-eviction machinery."""

from silas_exp.resolvers import register as _register_resolvers

__version__ = "0.1.0"
_register_resolvers()
