"""The package's shape (issue 17): data flows one way through the stages.

These tests read the source with :mod:`ast`; nothing is imported or run.

- no import circles, counting imports inside functions;
- each module imports only its own layer and the layers before it (the stage order of
  docs/architecture.md), so a stage never reaches a later stage or the driver;
- only the GPU runtime imports CuPy, and nothing below ``report/`` imports IPython or
  ipywidgets;
- no module over 1,000 lines;
- no field of a stage result typed ``object`` or ``Any``;
- every dataclass of the mapping and memory packages frozen (a short list of
  exceptions, each with why);
- no test chooses a policy by patching a module constant or setting an environment
  variable (policies are option fields).
"""
from __future__ import annotations

import ast
import functools
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "polymagic"

#: the layers, first to last; a module's layer is that of its longest matching prefix
LAYERS: list[tuple[str, ...]] = [
    ("polymagic.errors", "polymagic.expr", "polymagic.dtypes", "polymagic.version",
     "polymagic.notes", "polymagic.names"),
    ("polymagic.isl_util", "polymagic.helper_process", "polymagic.scop", "polymagic.kir",
     "polymagic.thread_space"),
    ("polymagic.options",),
    ("polymagic.frontend",),
    ("polymagic.deps", "polymagic.source_tree"),
    ("polymagic.schedule",),
    ("polymagic.memory",),
    ("polymagic.mapping",),
    ("polymagic.tiles",),
    ("polymagic.lower",),
    ("polymagic.codegen",),
    ("polymagic.compiler",),
    ("polymagic.transfers",),
    ("polymagic.runtime",),
    ("polymagic.report",),
    ("polymagic.api",),
    ("polymagic.magic", "polymagic.cli", "polymagic.__main__", "polymagic"),
]


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _imports(name: str, path: pathlib.Path) -> set[str]:
    """Modules of the package (and outside names) that ``name`` imports anywhere."""
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            anchor = base[:len(base) - (node.level - 1)] if node.level else []
            mod = ".".join(anchor + ([node.module] if node.module else []))
            subs = {f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in MODULES}
            out |= subs or {mod}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out - {name}


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Each module's imports; built on first use, not at collection (parsing the
    package costs every xdist worker about 1.5 CPU s, and one worker runs these tests)."""
    return {m: _imports(m, p) for m, p in MODULES.items()}


def _layer(module: str) -> int:
    best, found = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for pre in prefixes:
            if (module == pre or module.startswith(pre + ".")) and len(pre) > best:
                best, found = len(pre), i
    return found


def _circles() -> list[list[str]]:
    """Strongly connected components of two or more modules."""
    from polymagic.schedule.loop_kinds import strongly_connected
    edges = {(m, t) for m, ts in _graph().items() for t in ts if t in MODULES}
    return [c for c in strongly_connected(sorted(MODULES), edges) if len(c) > 1]


def test_no_import_circles():
    assert _circles() == []


def test_every_module_has_a_layer():
    assert [m for m in MODULES if _layer(m) < 0] == []


def test_no_module_imports_a_later_layer():
    back = sorted(f"{m} -> {t}" for m, ts in _graph().items() for t in ts
                  if t in MODULES and _layer(t) > _layer(m))
    assert back == []


def test_cupy_only_in_the_gpu_runtime_and_no_notebook_packages_below_report():
    wrong = []
    for m, ts in _graph().items():
        roots = {t.split(".")[0] for t in ts}
        if "cupy" in roots and m != "polymagic.runtime.gpu":
            wrong.append(f"{m} imports cupy")
        if roots & {"IPython", "ipywidgets"} and _layer(m) < _layer("polymagic.report"):
            wrong.append(f"{m} imports {sorted(roots & {'IPython', 'ipywidgets'})}")
    assert wrong == []


def test_no_module_over_1000_lines():
    long = {m: n for m, p in MODULES.items()
            if (n := len(p.read_text().splitlines())) > 1000}
    assert long == {}


def _dataclass_fields(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(
                "dataclass" in ast.unparse(d) for d in node.decorator_list):
            for item in node.body:
                if isinstance(item, ast.AnnAssign):
                    yield node.name, ast.unparse(item.target), ast.unparse(item.annotation)


def test_no_dataclass_field_typed_object_or_any():
    loose = [f"{m}.{cls}.{name}: {ann}" for m, p in MODULES.items()
             for cls, name, ann in _dataclass_fields(ast.parse(p.read_text()))
             if re.search(r"\b(object|Any)\b", ann)]
    assert loose == []


#: dataclasses of the mapping and memory packages that are not frozen, with why; every
#: other one is a result (or part of one) that later stages only read (issue 33)
NOT_FROZEN: dict[str, str] = {}


def _dataclasses(tree: ast.Module):
    """(class name, whether frozen) of each dataclass of a module."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for d in node.decorator_list:
            text = ast.unparse(d)
            if re.fullmatch(r"(dataclasses\.)?dataclass(\(.*\))?", text, re.S):
                frozen = isinstance(d, ast.Call) and any(
                    k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value
                    for k in d.keywords)
                yield node.name, frozen


def test_mapping_and_memory_results_are_frozen():
    """Issue 33: what the mapping and the memory planning hand on is never edited
    afterwards (the lowering returns its own decisions), so every dataclass there is
    ``frozen=True`` but those of :data:`NOT_FROZEN`."""
    found = {f"{m}.{cls}": frozen for m, p in MODULES.items()
             if m.startswith(("polymagic.mapping.", "polymagic.memory."))
             for cls, frozen in _dataclasses(ast.parse(p.read_text()))}
    assert set(NOT_FROZEN) <= set(found)
    assert [c for c, frozen in found.items() if not frozen and c not in NOT_FROZEN] == []
    assert [c for c in NOT_FROZEN if found[c]] == []        # frozen since: drop the entry


#: environment variables tests may set: locations, not policies
_ENV_ALLOWED = {"POLYMAGIC_CACHE", "PYTHONPATH"}


def test_no_test_chooses_a_policy_by_patching():
    found = []
    for p in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if node.func.attr == "setattr" and any(
                    isinstance(a, str) and re.fullmatch(r"[A-Z][A-Z0-9_]+", a) for a in args):
                found.append(f"{p.name}:{node.lineno} patches {args[0]}")
            if node.func.attr == "setenv" and args and args[0] not in _ENV_ALLOWED:
                found.append(f"{p.name}:{node.lineno} sets {args[0]}")
    assert found == []


@pytest.mark.parametrize("doc", ["architecture.md"])
def test_the_architecture_document_names_existing_modules(doc):
    text = (ROOT / "docs" / doc).read_text()
    named = set(re.findall(r"`(polymagic(?:\.[a-z_0-9]+)+)`", text))
    assert named, "the document names no module"
    missing = sorted(n for n in named if n not in MODULES and
                     n.rsplit(".", 1)[0] not in MODULES)
    assert missing == []


def _private_imports() -> list[str]:
    out = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                out += [f"{name}:{node.lineno} imports {a.name} from {node.module}"
                        for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def test_no_module_imports_another_modules_private_name():
    """Issue 33: what one module offers another is public and documented; an
    underscore name is its own business."""
    assert _private_imports() == []


def test_each_kernel_ir_pass_has_a_test_on_hand_built_kernel_ir():
    """Issue 33: every module of ``lower/passes/`` (a pass) has ``tests/test_pass_<name>.py``,
    which builds its Kernel IR by hand (``pass_helpers``' loops and statements, or
    :mod:`polymagic.kir` constructors) instead of compiling a program."""
    passes = sorted(p.stem for p in (PKG / "lower" / "passes").glob("*.py")
                    if p.stem not in ("__init__", "context"))
    assert passes
    missing, compiled = [], []
    for name in passes:
        test = ROOT / "tests" / f"test_pass_{name}.py"
        if not test.exists():
            missing.append(name)
            continue
        text = test.read_text()
        if not re.search(r"\b(kir\.[A-Z]\w*\(|loop\(|compute\()", text) or \
                "compile_source" in text:
            compiled.append(name)
    assert not missing, f"passes without a test file: {missing}"
    assert not compiled, f"pass tests that do not build Kernel IR by hand: {compiled}"
