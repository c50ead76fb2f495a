"""The packaged policies, one module each; importing this package registers every one of them (a module added
here is found by its file: adding a policy touches no list)."""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
