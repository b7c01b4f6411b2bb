"""The seams the architecture promises, checked on the source itself (no Spark needed).

- no import cycle among ``sparkmark`` modules (function-level imports included);
- no module imports another module's private name (``from x import _y``);
- no module touches another object's private members (``obj._x``), outside ``self``/``cls``
  and py4j handles (``_jvm``, ``_jsc``, ``_gateway``, ``_jsparkSession``, ...);
- sources and sinks never import ``sparkmark.lifecycle.job``: they talk to a run through
  :class:`sparkmark.core.run.RunContext`;
- the packages are layers: a package imports only the packages below it (``LAYERS``);
- the top level stays a short list of packages, and no module grows past ``MAX_LINES`` without
  saying why in its docstring;
- every public module ships a docstring, and the package is typed (``py.typed``).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "sparkmark"
PY4J_HANDLES = {"_jvm", "_jsc", "_gateway", "_jsparkSession", "_jdf", "_jconf", "_jreader",
                "_mapping", "_asdict", "_fields",  # SQLAlchemy Row / namedtuple public API
                "_jwrite", "_sc", "_jmap", "_java_obj", "_jseq", "_gateway_client"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _resolve(mod: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = mod.split(".")
    is_pkg = MODULES[mod].name == "__init__.py"
    base = base if is_pkg else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(mod: str) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import in ``mod``."""
    tree = ast.parse(MODULES[mod].read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(mod, node)
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((sub, None, node.lineno) if sub in MODULES
                           else (target, a.name, node.lineno))
    return out


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for mod in MODULES:
        for target, _, _ in _imports(mod):
            if target in MODULES and target != mod:
                graph[mod].add(target)
    return graph


def _parents(mod: str) -> set[str]:
    parts = mod.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_no_import_cycles():
    graph = _graph()
    # a package's __init__ importing its own submodules is not a cycle through the package
    for mod, deps in graph.items():
        graph[mod] = {d for d in deps if d not in _parents(mod)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            strong(v)
    assert cycles == [], f"import cycles among sparkmark modules: {cycles}"


def test_no_private_names_imported_across_modules():
    bad = []
    for mod in MODULES:
        for target, name, line in _imports(mod):
            if name and name.startswith("_") and not name.startswith("__") and \
                    target.startswith("sparkmark") and target != mod:
                bad.append(f"{mod}:{line} imports {target}.{name}")
            if name is None and target.startswith("sparkmark") and \
                    target.rsplit(".", 1)[-1].startswith("_") and \
                    not target.endswith("__init__") and target.rsplit(".", 1)[0] != \
                    mod.rsplit(".", 1)[0]:
                bad.append(f"{mod}:{line} imports private module {target}")
    assert bad == [], "\n".join(bad)


def test_no_use_of_other_objects_private_members():
    bad = []
    for mod, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute):
                continue
            attr = node.attr
            if not attr.startswith("_") or attr.startswith("__") or attr in PY4J_HANDLES:
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            bad.append(f"{mod}:{node.lineno} uses .{attr} of {ast.unparse(owner)}")
    assert bad == [], "\n".join(bad)


@pytest.mark.parametrize("package", ["sparkmark.sources", "sparkmark.sinks"])
def test_sources_and_sinks_never_import_the_job(package):
    offenders = [f"{mod} imports {target}" for mod in MODULES if mod.startswith(package)
                 for target, _, _ in _imports(mod) if target == "sparkmark.lifecycle.job"]
    assert offenders == []


def test_job_imports_its_sources_and_sinks_at_the_top():
    tree = ast.parse(MODULES["sparkmark.lifecycle.job"].read_text())
    top = {_resolve("sparkmark.lifecycle.job", n) for n in tree.body if isinstance(n, ast.ImportFrom)}
    assert {"sparkmark.sources.files", "sparkmark.sources.jdbc", "sparkmark.sinks"} <= top


def test_modules_have_docstrings_and_the_package_is_typed():
    missing = [m for m, p in MODULES.items() if ast.get_docstring(ast.parse(p.read_text())) is None
               and p.name != "__init__.py" or (p.name == "__init__.py" and p.read_text().strip()
                                               and ast.get_docstring(ast.parse(p.read_text()))
                                               is None)]
    assert missing == [], f"modules without a docstring: {missing}"
    assert (SRC / "py.typed").is_file()


def test_public_api_has_docstrings_with_examples():
    """Every public class and function of the user-facing modules documents itself with an
    example (Delta Lake's tables.py style)."""
    import inspect

    import sparkmark
    from sparkmark.ops import bookmarks

    from sparkmark.lifecycle import job, pipeline
    from sparkmark.lifecycle.pipeline import declaring, rollback, running, windows

    from sparkmark.core import run, status

    missing = []
    for module in (bookmarks, job, pipeline, declaring, windows, running, rollback, run,
                   status):
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            doc = inspect.getdoc(obj) or ""
            if "example" not in doc.lower() and ">>>" not in doc and "::" not in doc:
                missing.append(f"{module.__name__}.{name}")
            if inspect.isclass(obj):
                for mname, member in vars(obj).items():
                    if mname.startswith("_") or not callable(member):
                        continue
                    if not inspect.getdoc(member):
                        missing.append(f"{module.__name__}.{name}.{mname}")
    assert missing == [], f"public names without a docstring/example: {missing}"
    assert sparkmark.__doc__


# The packages of ``sparkmark``, lowest layer first.  A package may import the packages of the
# layers below it, never one of its own layer or above (sources and sinks are siblings: neither
# imports the other).  The package root (``from sparkmark import Job``) is the public face: it
# may import any layer lazily, and only the layers from ``ops`` up import it.
LAYERS: list[set[str]] = [
    {"core"},                    # errors, statuses, clock, options, the run seam
    {"planning"},                # pure planning
    {"engine"},                  # JVM, Spark versions, file systems, JDBC, table metadata
    {"state"},                   # the state store and the ledger rows
    {"sources", "sinks"},        # read, and write exactly once
    {"lifecycle"},               # Job, Pipeline
    {"ops"},                     # CLI, bookmark administration, reports, demo
    {"glue", "integrations"},    # Glue scripts, Airflow, Dagster
    {"devtools"},                # the real servers tests, benchmarks and the demo start
]
RANK = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}
ROOT_IMPORTERS_FROM = RANK["ops"]


def _package(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_top_level_is_a_short_list_of_layered_packages():
    entries = sorted(p.name for p in SRC.iterdir() if not p.name.startswith((".", "__pycache__")))
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(RANK), f"packages not in LAYERS (or gone): {packages ^ set(RANK)}"
    assert entries == sorted(packages | {"__init__.py", "py.typed"}), entries


def _layer_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for mod, deps in graph.items():
        a = _package(mod)
        for dep in deps:
            b = _package(dep)
            if a == b:
                continue
            if a == "":        # the root re-exports the public API
                ok = b != "devtools"
            elif b == "":      # the public API, used from the operator's tools up
                ok = RANK[a] >= ROOT_IMPORTERS_FROM
            else:
                ok = RANK[b] < RANK[a]
            if not ok:
                bad.append(f"{mod} imports {dep}")
    return sorted(bad)


def test_each_package_imports_only_the_layers_below_it():
    bad = _layer_violations(_graph())
    assert bad == [], "imports against the layers:\n" + "\n".join(bad)


def test_the_layer_check_sees_upward_sideways_and_root_imports():
    graph = _graph()
    graph["sparkmark.planning.bands"] = graph["sparkmark.planning.bands"] | {
        "sparkmark.lifecycle.job", "sparkmark.planning.listing"}
    graph["sparkmark.sinks.files"] = graph["sparkmark.sinks.files"] | {"sparkmark.sources.files"}
    graph["sparkmark.state.store"] = graph["sparkmark.state.store"] | {"sparkmark"}
    assert _layer_violations(graph) == ["sparkmark.planning.bands imports sparkmark.lifecycle.job",
                                        "sparkmark.sinks.files imports sparkmark.sources.files",
                                        "sparkmark.state.store imports sparkmark"]


MAX_LINES = 600


def test_no_module_is_long_without_saying_why():
    """A module over ``MAX_LINES`` lines states why in its docstring (a line starting
    ``Why one module:``)."""
    long = []
    for mod, path in MODULES.items():
        text = path.read_text()
        if text.count("\n") > MAX_LINES and "Why one module:" not in (ast.get_docstring(
                ast.parse(text)) or ""):
            long.append(f"{mod}: {text.count(chr(10))} lines")
    assert long == [], "modules over %d lines without a reason:\n%s" % (MAX_LINES, "\n".join(long))
