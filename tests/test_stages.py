"""One stage vocabulary (issue 33): :class:`polymagic.notes.Stage` names the stage of
every note, of every entry of the driver's stage log, and the report's grouping reads
its order, headings and flags from it.

The package-wide checks read the source with :mod:`ast` (as tests/test_architecture.py
does); the others build notes and compile a small function.
"""
from __future__ import annotations

import ast
import json
import pathlib
import pickle

import pytest

from polymagic.notes import Note, Stage

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "polymagic"

GEMM = """
void gemm(int N, float A[N][N], float B[N][N], float C[N][N]) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        C[i][j] += A[i][k] * B[k][j];
}
"""


def _is_member(node: ast.expr | None) -> bool:
    """``Stage.NAME`` with NAME a member."""
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "Stage" and node.attr in Stage.__members__)


def _stage_argument(call: ast.Call) -> ast.expr | None:
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg in ("stage", "name")), None)


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _stage_uses() -> list[tuple[str, int, ast.expr | None]]:
    """(module, line, stage expression) of every note made, every note re-staged with
    ``replace(note, stage=...)``, every stage-log entry and every comparison of a
    ``.stage`` field, in the package."""
    out = []
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and _callee(node) in ("Note", "StageLog"):
                out.append((rel, node.lineno, _stage_argument(node)))
            elif isinstance(node, ast.Call) and _callee(node) == "run" and rel.endswith(
                    "compiler/driver.py"):
                out.append((rel, node.lineno, _stage_argument(node)))
            elif isinstance(node, ast.Call) and _callee(node) == "replace":
                out += [(rel, node.lineno, k.value) for k in node.keywords
                        if k.arg == "stage"]
            elif (isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute)
                  and node.left.attr == "stage"):
                out += [(rel, node.lineno, c) for c in node.comparators
                        if isinstance(c, ast.Constant)]
    return out


def test_every_note_and_stage_log_entry_names_a_stage_member():
    uses = _stage_uses()
    assert len(uses) >= 50          # the scan finds the package's notes
    literal = [f"{m}:{line}: {ast.unparse(e) if e else None}" for m, line, e in uses
               if isinstance(e, ast.Constant) or e is None]
    assert literal == []
    # the driver's log entries are members, not names passed along
    driver = [e for m, _, e in uses if m.endswith("compiler/driver.py")
              and not isinstance(e, ast.Name)]
    assert driver and all(_is_member(e) for e in driver), [ast.unparse(e) for e in driver]


def test_note_makers_pass_members_directly():
    """Where a note is made its stage is written as ``Stage.NAME`` (or passed through a
    parameter or field that holds one); never a string."""
    made = [(m, line, e) for m, line, e in _stage_uses()
            if not (_is_member(e) or isinstance(e, (ast.Name, ast.Attribute)))]
    assert made == []


def test_why_reads_its_tables_from_the_vocabulary():
    from polymagic.report import why
    assert set(why.STAGE_TITLES) == set(Stage)
    assert all(why.STAGE_TITLES[s] == s.label for s in Stage)
    assert why.GPU_STAGES == frozenset(s for s in Stage if s.gpu)
    assert why._STRATEGY == frozenset(s for s in Stage if s.strategy)
    # no stage spelled out in why.py: every table is derived
    names = {s.value for s in Stage}
    tree = ast.parse((PKG / "report" / "why.py").read_text())
    spelled = [n.value for n in ast.walk(tree)
               if isinstance(n, ast.Constant) and n.value in names]
    assert spelled == []


def test_note_stage_is_a_member_and_unknown_names_are_refused():
    n = Note("memory", "a buffer", "kernel0", "A")
    assert n.stage is Stage.MEMORY and n.stage == "memory"
    assert n == Note(Stage.MEMORY, "a buffer", "kernel0", "A")
    assert json.loads(json.dumps(n.as_dict()))["stage"] == "memory"
    assert type(n.as_dict()["stage"]) is str
    assert pickle.loads(pickle.dumps(n)).stage is Stage.MEMORY     # the helper process
    with pytest.raises(ValueError):
        Note("deps", "the old name of the dependences stage")


def test_stages_are_in_pipeline_order_with_unique_names_and_labels():
    assert [s.order for s in Stage] == list(range(len(Stage)))
    assert len({s.value for s in Stage}) == len(Stage)
    assert all(s.label for s in Stage)
    assert Stage.PARSE.order < Stage.DEPENDENCES.order < Stage.SCHEDULE.order \
        < Stage.LOWERING.order < Stage.CUDA.order < Stage.HOST.order < Stage.CPU.order
    assert f"{Stage.DEPENDENCES:<12}|" == "dependences |"


def test_grouped_notes_follow_the_stage_order():
    from polymagic.report.why import grouped, lines
    notes = [Note(Stage.RUN, "inputs", kind="info"), Note(Stage.CPU, "omp for"),
             Note(Stage.PARSE, "expanded"), Note(Stage.REGISTERS, "r", "kernel0"),
             Note(Stage.MEMORY, "b", "kernel0"), Note(Stage.DEPENDENCES, "budget")]
    (_, whole), (_, k0) = grouped(notes)
    assert [s for s, _ in whole] == [Stage.PARSE, Stage.DEPENDENCES, Stage.CPU, Stage.RUN]
    assert [s for s, _ in k0] == [Stage.MEMORY, Stage.REGISTERS]
    assert "  dependences:" in lines(notes) and "  shared-memory buffers:" in lines(notes)


def test_stage_log_entries_are_members_in_pipeline_order():
    from polymagic.compiler import compile_source
    from polymagic.options import Options
    c = compile_source(GEMM, Options(sizes={"N": 32}))
    names = [s.name for s in c.stages]
    assert all(isinstance(n, Stage) for n in names)
    assert [n.order for n in names] == sorted(n.order for n in names)
    assert all(n.stage in Stage for n in c.notes)
