"""PageRank on graphs whose ranks are known."""

from __future__ import annotations

import pytest

from loremap.codemap.rank import DAMPING, pagerank


def test_ranks_sum_to_one_and_the_hub_wins():
    edges = [(leaf, "hub", 1.0) for leaf in ("a", "b", "c", "d")]
    ranks = pagerank(["hub", "a", "b", "c", "d"], edges)
    assert sum(ranks.values()) == pytest.approx(1.0)
    assert max(ranks, key=ranks.__getitem__) == "hub"
    assert ranks["a"] == pytest.approx(ranks["d"])


def test_a_two_node_cycle_splits_evenly():
    ranks = pagerank(["x", "y"], [("x", "y", 1.0), ("y", "x", 1.0)])
    assert ranks == {"x": pytest.approx(0.5), "y": pytest.approx(0.5)}


def test_the_closed_form_of_a_dangling_pair():
    # x -> y, y dangling: r_y = (1-d)/2 + d*r_x + d*r_y/2, r_x = (1-d)/2 + d*r_y/2
    ranks = pagerank(["x", "y"], [("x", "y", 1.0)])
    d = DAMPING
    r_x = (1 - d) / 2 + d * ranks["y"] / 2
    assert ranks["x"] == pytest.approx(r_x)
    assert ranks["y"] == pytest.approx(1 - r_x)


def test_weights_steer_the_rank():
    ranks = pagerank(["s", "heavy", "light"], [("s", "heavy", 9.0), ("s", "light", 1.0)])
    assert ranks["heavy"] > ranks["light"]


def test_a_warm_start_converges_to_the_same_ranks():
    nodes = [f"n{i}" for i in range(30)]
    edges = [(f"n{i}", f"n{(i * 7 + 3) % 30}", 1.0 + i % 3) for i in range(30)]
    edges += [(f"n{i}", "n0", 0.5) for i in range(1, 30, 4)]
    cold = pagerank(nodes, edges)
    warm = pagerank(nodes, edges, start={n: 1.0 for n in nodes})
    assert warm == {n: pytest.approx(cold[n], abs=1e-9) for n in nodes}


def test_unknown_nodes_self_loops_and_empty_graphs_are_harmless():
    assert pagerank([], []) == {}
    ranks = pagerank(["a"], [("a", "a", 1.0), ("a", "ghost", 1.0)])
    assert ranks == {"a": pytest.approx(1.0)}
