"""Import LanceDB without its REST namespace client's start-up cost.

`import lancedb` imports `lance_namespace`, which imports the models of the generated REST
client `lance_namespace_urllib3_client`; that package's `__init__` also imports every one of
its API modules, whose hundreds of pydantic `validate_call` wrappers are built at import. A
local table never uses that client, and the API modules are most of the import: measured on 2
cores at load 8, `import lancedb` took 2.3-3.3 s, and 1.3-1.8 s with the client's `__init__`
deferred (bench/cli_startup.py --memory times a cold `memory search`).

So the client package is registered first as a module with its real spec and `__path__`, whose
`__init__` has not run: its submodules (the models lance_namespace needs) import as usual, and
the first attribute asked of the package itself runs the real `__init__` then, so nothing that
uses the client sees a difference.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any

CLIENT = "lance_namespace_urllib3_client"
_lock = threading.Lock()


def load_lancedb() -> ModuleType:
    """The `lancedb` module, imported with the REST client's package `__init__` deferred."""
    if "lancedb" not in sys.modules:
        with _lock:
            _defer_client_init()
    return importlib.import_module("lancedb")


def _defer_client_init() -> None:
    if CLIENT in sys.modules:
        return
    spec = importlib.util.find_spec(CLIENT)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not installed as a package: lancedb's own import says what is missing
    package = importlib.util.module_from_spec(spec)
    ran = False

    def rest_of_package(name: str) -> Any:
        nonlocal ran
        if ran or name.startswith("__"):
            raise AttributeError(f"module {CLIENT!r} has no attribute {name!r}")
        ran = True
        spec.loader.exec_module(package)  # type: ignore[union-attr]
        return getattr(package, name)

    package.__getattr__ = rest_of_package  # type: ignore[method-assign]
    sys.modules[CLIENT] = package
