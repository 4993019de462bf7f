"""Thread space (polymagic.thread_space): the ids' bounds, the cyclic filter and the
linear thread id, each checked against isl or a hand computation."""
from __future__ import annotations

import itertools

import islpy as isl
import pytest

from polymagic import kir, thread_space as ts
from polymagic.expr import evaluate


def _derived_bounds(block: tuple[int, int, int]) -> isl.Set:
    """The thread ids of a block as isl derives them: the images of the linear ids
    ``0 <= t < X*Y*Z`` under ``t -> (t mod X, (t / X) mod Y, t / (X*Y))``, on the
    axes with more than one thread."""
    x, y, z = block
    axes = ts.thread_axes(block)
    ids = [ts.THREAD_IDS[a] for a in axes]
    value = {"x": f"t mod {x}", "y": f"floor(t / {x}) mod {y}", "z": f"floor(t / {x * y})"}
    eqs = " and ".join(f"{ts.THREAD_IDS[a]} = {value[a]}" for a in axes)
    return isl.Set(f"[{', '.join(ids)}] -> {{ : exists t : 0 <= t < {x * y * z} and {eqs} }}")


@pytest.mark.parametrize("block", [(32, 8, 1), (16, 4, 2), (256, 1, 1), (1, 1, 1)])
def test_thread_bounds_set_is_what_isl_derives(block):
    assert ts.thread_bounds_set(block).is_equal(_derived_bounds(block))


def test_bounds_name_only_the_ids_they_use():
    s = ts.thread_bounds_set((32, 8, 1))
    assert [s.get_dim_name(isl.dim_type.param, i) for i in range(s.dim(isl.dim_type.param))] \
        == ["pm_tx", "pm_ty"]
    b = ts.block_bounds_set(["y", "x"])
    assert b.is_equal(isl.Set("[pm_bx, pm_by] -> { : pm_bx >= 0 and pm_by >= 0 }"))
    assert ts.bounds_set([]).is_equal(isl.Set("{ : }"))


def test_explicit_axes_keep_their_order_and_one_thread_axes():
    assert ts.thread_bounds((32, 1, 1), ["y", "x"]) == ["0 <= pm_ty < 1", "0 <= pm_tx < 32"]


def test_thread_bounds_in_a_space_bound_its_thread_ids_only():
    space = isl.Set("[n, pm_tx, pm_bx] -> { : }").get_space()
    got = ts.thread_bounds_in((64, 4, 1), space)
    assert got.is_equal(isl.Set("[pm_tx] -> { : 0 <= pm_tx < 64 }"))


def test_generic_context():
    ctx = ts.generic_id_context(["pm_tx", "pm_bx"], {"pm_qg8": 32})
    assert ctx.is_equal(isl.Set("[pm_tx, pm_bx, pm_qg8] -> { : 0 <= pm_tx < 1024 and "
                                "pm_bx >= 0 and 0 <= pm_qg8 < 32 }"))
    assert ts.generic_id_context([], {}).is_equal(isl.Set("{ : }"))


def _per_thread(filt: isl.UnionSet, threads: int) -> list[isl.Set]:
    """The points of ``filt`` (a filter over the parameter ``pm_tx``) each thread
    gets."""
    s = isl.Set.from_union_set(filt.intersect_params(ts.thread_bounds_set((threads, 1, 1))))
    pos = s.find_dim_by_name(isl.dim_type.param, "pm_tx")
    return [s.fix_val(isl.dim_type.param, pos, isl.Val(t)).project_out(
        isl.dim_type.param, pos, 1) for t in range(threads)]


@pytest.mark.parametrize("extent,threads", [(100, 32), (32, 32), (5, 8)])
def test_cyclic_filter_gives_each_point_to_exactly_one_thread(extent, threads):
    domain = isl.UnionSet(f"{{ S[i] : 0 <= i < {extent} }}")
    point = isl.UnionPwAff(f"{{ S[i] -> [(i)] }}")
    filt = ts.cyclic_filter(point, ts.thread_id_on(domain, "x"), threads,
                            points=extent).intersect(domain)
    parts = _per_thread(filt, threads)
    whole = isl.Set(f"{{ S[i] : 0 <= i < {extent} }}")
    union = parts[0]
    for p in parts[1:]:
        union = union.union(p)
    assert union.is_equal(whole)
    for a, b in itertools.combinations(parts, 2):
        assert a.intersect(b).is_empty()
    assert all(p.is_subset(isl.Set(f"{{ S[i] : (i - {t}) mod {threads} = 0 }}"))
               for t, p in enumerate(parts))


def test_cyclic_condition_is_the_cyclic_filter():
    domain = isl.UnionSet("[n] -> { S[i, j] : 0 <= i < n and 0 <= j < n }")
    point = isl.UnionPwAff("[n] -> { S[i, j] -> [(i + 2 * j)] }")
    isl_form = ts.cyclic_filter(point, ts.thread_id_on(domain, "y"), 8).intersect(domain)
    text = ts.cyclic_condition("i + 2 * j", ts.THREAD_IDS["y"], 8)
    text_form = isl.UnionSet(f"[n, pm_ty] -> {{ S[i, j] : 0 <= i < n and 0 <= j < n "
                             f"and {text} }}")
    assert isl_form.is_equal(text_form)


def test_linear_thread_id_on_a_hand_example():
    block = (4, 3, 2)
    for x, y, z in itertools.product(range(4), range(3), range(2)):
        env = {"pm_tx": x, "pm_ty": y, "pm_tz": z}
        want = x + 4 * (y + 3 * z)
        assert evaluate(ts.linear_thread_id(block), env) == want
        assert evaluate(ts.linear_thread_id_rows(block), env) == want
        text = ts.linear_thread_id_text(block)
        aff = isl.PwAff(f"[pm_tx, pm_ty, pm_tz] -> {{ [({text})] }}")
        fixed = isl.Set(f"[pm_tx, pm_ty, pm_tz] -> {{ : pm_tx = {x} and pm_ty = {y} "
                        f"and pm_tz = {z} }}")
        assert aff.intersect_params(fixed).is_equal(
            isl.PwAff(f"[pm_tx, pm_ty, pm_tz] -> {{ [({want})] }}").intersect_params(fixed))


def test_linear_thread_id_leaves_out_one_thread_axes():
    assert evaluate(ts.linear_thread_id((32, 1, 4)), {"pm_tx": 3, "pm_tz": 2}) == 3 + 32 * 2
    assert evaluate(ts.linear_thread_id((1, 1, 1)), {}) == 0
    assert ts.linear_thread_id_text((32, 8, 1)) == "1 * pm_tx + 32 * pm_ty"
    assert ts.linear_thread_id_text((32, 8, 1), modulo=32) == "1 * pm_tx"
    assert ts.linear_thread_id_text((1, 1, 1)) == "0"


def test_copy_split_value_divides_the_linear_id():
    value = kir.copy_split_value(f"{kir.COPY_GROUP}8", (32, 4, 1))
    assert evaluate(value, {"pm_tx": 17, "pm_ty": 3}) == (17 + 32 * 3) // 8


def test_linear_thread_group_is_the_linear_id_divided():
    block = (32, 4, 2)
    text = ts.linear_thread_group_text(block, 32)
    assert text == "1 * pm_ty + 4 * pm_tz"
    group = isl.PwAff(f"[pm_tx, pm_ty, pm_tz] -> {{ [({text})] }}")
    lin = isl.PwAff(f"[pm_tx, pm_ty, pm_tz] -> {{ [(floor((pm_tx + 32 * pm_ty + 128 * pm_tz)"
                    f" / 32))] }}")
    assert group.intersect_params(ts.thread_bounds_set(block)).is_equal(
        lin.intersect_params(ts.thread_bounds_set(block)))
    assert ts.linear_thread_group_text((32, 1, 1), 32) == "0"
