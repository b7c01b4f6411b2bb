"""The seams the architecture promises, checked on the source itself (no Spark needed).

- no import cycle among ``sparkmark`` modules (function-level imports included);
- no module imports another module's private name (``from x import _y``);
- no module touches another object's private members (``obj._x``), outside ``self``/``cls``
  and py4j handles (``_jvm``, ``_jsc``, ``_gateway``, ``_jsparkSession``, ...);
- sources and sinks never import ``sparkmark.job``: they talk to a run through
  :class:`sparkmark.run.RunContext`;
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
                 for target, _, _ in _imports(mod) if target == "sparkmark.job"]
    assert offenders == []


def test_job_imports_its_sources_and_sinks_at_the_top():
    tree = ast.parse(MODULES["sparkmark.job"].read_text())
    top = {_resolve("sparkmark.job", n) for n in tree.body if isinstance(n, ast.ImportFrom)}
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
    from sparkmark import bookmarks, job, pipeline, run, status

    missing = []
    for module in (bookmarks, job, pipeline, run, status):
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
