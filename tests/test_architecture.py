"""The layers of docs/architecture.md hold, read from the product code's ``ast`` (nothing is imported).

    corpora  <-  models  <-  features  <-  probes  <-  viz      <-  app_pages  <-  app.py
    (data)      (embedders) (feature      (probes)     (pure app    (Streamlit)
                             cache)                     logic)
                                                   <-  cluster  (sweeps, sharded extraction, optional Ray)

- no upward import: not at module level, not inside a function, not by string (``importlib.import_module``,
  a registry's ``"package.module:attr"``); a registry may name modules of its own package by string;
- viz and cluster sit side by side (neither imports the other); viz takes callbacks (imports neither
  ``models`` nor ``features``); only app_pages/app.py import streamlit;
- entry points (``app.py``, ``*/__main__.py``) may import any layer, and nothing imports them;
- no import cycle, inside a package or between packages (module-level and function-level imports);
- modules stay small, app_pages/ included;
- function-local imports are few and each is a deliberate lazy import, said so in a comment.

Every assertion lists the offending files, lines or import edges.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from corpora.paths import REPO_ROOT

#: top-level package -> its layer; a package may import only packages of a lower layer (and itself).
LAYERS = {"corpora": 0, "models": 1, "features": 2, "probes": 3, "viz": 4, "cluster": 4, "app_pages": 5}
PACKAGES = tuple(LAYERS)
ENTRY_POINTS = ("app.py",)  # plus every */__main__.py
#: further imports a package must not make although they run down the layers.
ALSO_FORBIDDEN = {"viz": {"models", "features"}}  # viz takes callbacks instead
STREAMLIT_ALLOWED = {"app_pages", "app"}
# "about 300 lines": one concern per module, app_pages/ too. The same cap as the former 330, measured
# on `ruff format`ted code, which runs about 16 % longer (330 × 1.16 ≈ 380).
MAX_LINES = 380
MAX_LOCAL_IMPORTS = 40
LAZY_COMMENT = re.compile(r"#.*\blazy\b", re.IGNORECASE)  # e.g. `# lazy: torch`
#: a string that names a module: "pkg.mod" or "pkg.mod:attr" (checked against the files below)
MODULE_STRING = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?::[A-Za-z_]\w*)?$")


def product_files() -> list[Path]:
    files = [p for pkg in PACKAGES for p in sorted((REPO_ROOT / pkg).rglob("*.py"))]
    return files + [REPO_ROOT / name for name in ENTRY_POINTS]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def rel(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT))


def package_of(module: str) -> str:
    return module.split(".")[0]


def is_entry_point(module: str) -> bool:
    return module in {Path(n).stem for n in ENTRY_POINTS} or module.endswith(".__main__")


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module (or top-level name of a third-party package)
    path: Path
    line: int
    kind: str  # "module" | "function" | "string"

    def __str__(self) -> str:
        return f"{rel(self.path)}:{self.line} {self.source} -> {self.target} ({self.kind})"


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in product_files()}


def resolve(name: str) -> str:
    """The longest product module that ``name`` (a dotted path) starts with, else ``name`` itself."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in modules():
            return ".".join(parts[:i])
    return name


def _docstrings(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _local_import_nodes(tree: ast.Module) -> set[int]:
    """ids of the import statements inside a function body (at any depth)."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            ids |= {id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return ids


@cache
def imports_of(source: str) -> tuple[Import, ...]:
    path = modules()[source]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    local, docs = _local_import_nodes(tree), _docstrings(tree)
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        kind = "function" if id(node) in local else "module"
        if isinstance(node, ast.Import):
            out += [Import(source, resolve(a.name), path, node.lineno, kind) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's own package upward
                anchor = source.split(".")[: len(source.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            # `from a.b import c` imports module a.b.c when that is a module, else a name of a.b
            out += [
                Import(
                    source,
                    resolve(f"{base}.{a.name}") if f"{base}.{a.name}" in modules() else resolve(base),
                    path,
                    node.lineno,
                    kind,
                )
                for a in node.names
            ]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            m = MODULE_STRING.match(node.value)
            if m and m.group(1) in modules():
                out.append(Import(source, m.group(1), path, node.lineno, "string"))
    return tuple(out)


def all_imports() -> list[Import]:
    """Every import, once per (file, line, target, kind): ``from m import a, b`` is one edge."""
    found = dict.fromkeys(imp for source in modules() for imp in imports_of(source))
    return sorted(found, key=lambda imp: (rel(imp.path), imp.line, imp.target))


def forbidden(imp: Import) -> bool:
    src, dst = package_of(imp.source), package_of(imp.target)
    if is_entry_point(imp.source):
        return False
    if dst == "streamlit":
        return src not in STREAMLIT_ALLOWED
    if src == dst or dst not in LAYERS:  # own package, standard library, third party
        return False
    if imp.kind == "string":  # a registry may name only modules of its own package
        return True
    if dst in ALSO_FORBIDDEN.get(src, set()):
        return True
    return src != "app" and LAYERS[dst] >= LAYERS[src]


def test_no_import_runs_up_the_layers():
    """Module-level, function-level and by-string imports alike."""
    bad = [str(imp) for imp in all_imports() if forbidden(imp)]
    assert bad == [], "imports that run up (or across) the layers:\n" + "\n".join(bad)


def test_nothing_imports_an_entry_point():
    bad = [str(imp) for imp in all_imports() if is_entry_point(imp.target) and imp.target in modules()]
    assert bad == [], "imports of an entry point (app.py, */__main__.py):\n" + "\n".join(bad)


def test_viz_takes_callbacks():
    bad = [
        str(imp)
        for imp in all_imports()
        if package_of(imp.source) == "viz" and package_of(imp.target) in {"models", "features"}
    ]
    assert bad == [], "viz imports models/features (pass a callback instead):\n" + "\n".join(bad)


def _graph(level: str) -> dict[str, dict[str, list[Import]]]:
    """source -> target -> the imports making that edge (module or package level; no strings, no entry points)."""
    graph: dict[str, dict[str, list[Import]]] = defaultdict(lambda: defaultdict(list))
    for imp in all_imports():
        if imp.kind == "string" or imp.target not in modules() or is_entry_point(imp.source):
            continue
        src, dst = (imp.source, imp.target) if level == "module" else (package_of(imp.source), package_of(imp.target))
        if src != dst:
            graph[src][dst].append(imp)
    return graph


def strongly_connected(graph: dict[str, dict[str, list[Import]]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative); the components with more than one node, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    nodes = set(graph) | {t for targets in graph.values() for t in targets}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, {}))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        comp.append(top)
                        if top == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, {})))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return out


def _explain(graph, components: list[list[str]]) -> str:
    lines = []
    for comp in components:
        lines.append(f"cycle among {len(comp)}: {', '.join(comp)}")
        members = set(comp)
        lines += [
            f"    {imp}"
            for src in comp
            for dst, imps in sorted(graph.get(src, {}).items())
            if dst in members
            for imp in imps
        ]
    return "\n".join(lines)


@pytest.mark.parametrize("level", ["module", "package"])
def test_no_import_cycle(level):
    """Module level: no cycle inside a package or across packages; package level: no two packages import
    each other (counting imports inside functions, which only hide a cycle)."""
    graph = _graph(level)
    components = strongly_connected(graph)
    assert components == [], f"import cycles ({level} graph):\n" + _explain(graph, components)


def test_modules_stay_small():
    long = [
        f"{rel(p)}: {n} lines"
        for p in product_files()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]
    assert long == [], f"modules over {MAX_LINES} lines:\n" + "\n".join(long)


def local_imports() -> list[Import]:
    """One entry per function-local import statement."""
    seen, out = set(), []
    for imp in all_imports():
        if imp.kind == "function" and (imp.path, imp.line) not in seen:
            seen.add((imp.path, imp.line))
            out.append(imp)
    return out


def _has_lazy_comment(imp: Import) -> bool:
    lines = imp.path.read_text(encoding="utf-8").splitlines()
    node = next(
        n
        for n in ast.walk(ast.parse("\n".join(lines)))
        if isinstance(n, (ast.Import, ast.ImportFrom)) and n.lineno == imp.line
    )
    around = lines[max(imp.line - 2, 0) : node.end_lineno]  # the line above, the statement's lines
    return any(LAZY_COMMENT.search(line) for line in around)


def test_function_local_imports_are_few_and_deliberate():
    """At most ``MAX_LOCAL_IMPORTS`` (129 before issue 25's refactor), each saying why it is lazy."""
    found = local_imports()
    n = len(found)
    unexplained = [str(imp) for imp in found if not _has_lazy_comment(imp)]
    assert n <= MAX_LOCAL_IMPORTS and unexplained == [], (
        f"{n} function-local imports (at most {MAX_LOCAL_IMPORTS}); each needs a `# lazy: <why>` comment "
        f"on its line or the line above. Without one ({len(unexplained)}):\n" + "\n".join(unexplained)
    )


def test_the_checks_see_what_they_check():
    """The walker finds imports inside functions and module strings; Tarjan finds a cycle and only it."""
    assert any(imp.kind == "function" for imp in all_imports())
    assert any(imp.kind == "string" and imp.target.startswith("probes.tasks.") for imp in imports_of("probes.registry"))
    graph = {"a": {"b": []}, "b": {"c": []}, "c": {"a": []}, "d": {"a": []}}
    assert strongly_connected(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize(
    ("source", "target", "kind", "bad"),
    [
        ("probes.cli", "cluster.cli", "string", True),  # a registry naming a higher layer's module
        ("probes.cli", "models.registry", "string", True),  # by string across layers, even downward
        ("probes.registry", "probes.tasks.pos", "string", False),  # a registry of its own package
        ("probes.cli", "cluster.cli", "function", True),  # hidden in a function: still upward
        ("viz.zoo", "models.registry", "module", True),  # viz takes callbacks
        ("viz.results", "probes.registry", "module", False),
        ("viz.results", "cluster.plan", "module", True),  # side by side: neither imports the other
        ("models.base", "streamlit", "function", True),
        ("app_pages.common", "streamlit", "module", False),
        ("probes.__main__", "cluster.cli", "module", False),  # an entry point imports any layer
        ("app", "app_pages.common", "module", False),
    ],
)
def test_the_layer_rule(source, target, kind, bad):
    assert forbidden(Import(source, target, REPO_ROOT / "x.py", 1, kind)) is bad


def test_the_command_line_starts_without_torch():
    """``python -m probes stats`` and ``compare`` (which build no probe's parser) import no torch and no fsspec: the
    lazy imports that say so hold. ``features`` loaded its embedding modules, and torch with them, on any import of
    the package, and ``cluster.storage`` fsspec on every command."""
    for command in (["stats", "--help"], ["compare", "--help"]):
        out = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "probes", *command],
            capture_output=True, text=True, cwd=REPO_ROOT, check=True,
        )  # fmt: skip
        imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if line.startswith("import")}
        assert "probes.cli" in imported and not {"torch", "fsspec"} & imported, command
    import features
    import features.build
    import features.extract

    # the embedding names are still the package's, loaded on first use
    assert features.get_features is features.extract.get_features and features.gb is features.build.gb
    with pytest.raises(AttributeError):
        features.no_such_name  # noqa: B018


@pytest.mark.parametrize("package", ["probes/tasks", "probes/estimators", "probes/stats", "probes/reporting"])
def test_a_package_docstring_names_every_module_it_holds(package: str):
    """The package notes are the map a newcomer reads: a module they do not name is one the map leaves out
    (structural and head_syntax were missing from three of them, units and restate from the others)."""
    folder = REPO_ROOT / package
    doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    modules = {p.stem for p in folder.glob("*.py") if not p.name.startswith("_")}
    modules |= {p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    named = set(re.findall(r"``(\w+)/?``", doc)) | set(re.findall(r"(?<![\w`])(\w+)/(?![\w`])", doc))
    assert sorted(modules - named) == []


def probe_bypasses() -> list[str]:
    """Calls that run a probe without ``probes.run.run_probe``: a spec's ``run``/``baselines`` called, or a
    ``RunContext`` made, anywhere but the probes package (which defines them and runs them in one place)."""
    out = []
    for path in product_files():
        if package_of(module_name(path)) == "probes":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id == "RunContext":
                out.append(f"{rel(path)}:{node.lineno} RunContext(…)")
            elif isinstance(func, ast.Attribute) and func.attr in ("run", "baselines"):
                # a spec: PROBE, CKA, spec, get_probe(...)
                owner = func.value
                named = isinstance(owner, ast.Name) and (owner.id.isupper() or owner.id in ("spec", "probe"))
                if named or (isinstance(owner, ast.Call) and getattr(owner.func, "id", "") == "get_probe"):
                    out.append(f"{rel(path)}:{node.lineno} {ast.unparse(func)}(…)")
    return out


def test_a_probe_runs_through_the_one_run_path():
    """The Layer profile page ran its CKA with ``CKA.run(…, RunContext(…))``: no option checks, no seeding, none
    of what ``run_probe`` adds. Outside ``probes`` a probe runs through ``run_probe`` alone."""
    assert probe_bypasses() == []
